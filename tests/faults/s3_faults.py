"""The S3-compatible payload store answers 503 SlowDown (or answers slowly) while conversations that
keep their payloads there have decisions and tools in flight, then recovers.

The worker and the CLI reach the store (moto's server) through a proxy of the test's own
(tests/support/s3_fault_proxy.py); the scenario's own client reads it directly, as an operator's
would. Every tool result here goes to the store, with the model inputs that carry it, and
workspaces are saved there after each tool (the default with a shared store). Each conversation
runs one `run_shell` whose output is stored, and which leaves a line per run. botocore tries each
call once (AWS_MAX_ATTEMPTS=1): what the store refuses reaches the system at once, so a fault of
seconds shows how the system, not the client library, rides it out.

Half the requests are approved just before the fault (their tools end, and their results are
stored, during it), the other half with the CLI during it. Nothing is restarted when the store
answers again; the scenario counts what was lost, doubled or left stuck.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import boto3
from temporalio.client import Client

from config.settings import Settings
from payload_store import data_converter
from payload_store.s3 import close_s3_clients
from tests.faults.outcome import FaultOutcome
from tests.faults.tool_runs import ToolRuns, counted, until
from tests.support.piped_worker import PipedWorker
from tests.support.processes import REPO_ROOT, process_env
from tests.support.s3_fault_proxy import S3FaultProxy
from tests.support.stack import DemoModelProcess

Fault = Literal["unavailable", "slow"]
# What the store does, phase after phase: answers 503 for the phase's seconds, or holds every
# answer SLOW_ANSWER_SECONDS (longer than a tool's heartbeat timeout: the waits must beat).
Phases = Sequence[tuple[Fault, float]]
SLOW_ANSWER_SECONDS = 12.0
# As a deployment with a shared store might set it: tool results of many kilobytes and the model's
# inputs that carry them go to the store; a tool's request (a few kilobytes) stays in the history.
PAYLOAD_THRESHOLD = 8 * 1024
OUTPUT_LINES = 4000  # the 16,000 characters a tool result keeps: a result the store holds


@dataclass
class S3FaultSeen:
    """What people saw: the CLI's answer to the decisions sent during the fault, the worker's log,
    and what the proxy answered (its 503s, its slow answers, what it forwarded)."""

    decided_during_fault: list[str] = field(default_factory=list)
    cli_during: subprocess.CompletedProcess[str] | None = None
    worker_log: str = ""
    answered: dict[str, int] = field(default_factory=dict)
    tool_messages: dict[str, list[str]] = field(default_factory=dict)


def _settings(workdir: Path, bucket: str, s3_url: str, model_url: str) -> Settings:
    return Settings(
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=workdir / "approvals.db",
        workspace_dir=workdir / "workspace",
        payload_store=f"s3://{bucket}/approvals",
        payload_store_threshold=PAYLOAD_THRESHOLD,
        s3_endpoint_url=s3_url,
        openai_base_url=model_url,
        openai_api_key="demo-key",
        llm_model="scripted-demo",
        approval_timeout=3600.0,
    )


async def run_s3_fault(
    workdir: Path,
    temporal_address: str,
    s3_url: str,
    *,
    conversations: int = 2,
    phases: Phases = (("unavailable", 4.0),),
    slow_answer_seconds: float = SLOW_ANSWER_SECONDS,
    workspace_saves: bool = True,
    tool_seconds: float = 1.0,
    deadline: float = 90.0,
    seen: S3FaultSeen | None = None,
) -> FaultOutcome:
    """`s3_url`: an S3-compatible server (AWS_ACCESS_KEY_ID and friends in the environment, as
    botocore reads them). The store fails as `phases` say, one after the other, then recovers."""
    seen = seen if seen is not None else S3FaultSeen()
    workdir.mkdir(parents=True, exist_ok=True)
    bucket = f"faults-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_url).create_bucket(Bucket=bucket)
    proxy = S3FaultProxy(s3_url).start()
    model = DemoModelProcess(workdir / "demo_model.log")
    settings = _settings(workdir, bucket, s3_url, model.base_url)
    env = process_env(
        settings,
        temporal_address,
        AWS_ENDPOINT_URL=proxy.url,
        AWS_MAX_ATTEMPTS="1",
        WORKSPACE_SAVES="on" if workspace_saves else "off",
    )
    worker = PipedWorker(env, workdir / "worker.log")
    try:
        worker.start()
        model.start()
        worker.wait_ready()
        client = await Client.connect(temporal_address, data_converter=data_converter(settings))
        tools = ToolRuns(client, settings)
        faults = _Faults(proxy, phases, slow_answer_seconds)
        outcome = await _fault_and_recover(tools, faults, env, conversations, tool_seconds, deadline, seen)
        return FaultOutcome("s3_" + "_then_".join(kind for kind, _ in phases), "sqlite", *outcome)
    finally:
        proxy.restore()
        worker.kill()  # nothing of it is needed any more: its conversations are done
        seen.worker_log = worker.log()
        seen.answered = dict(proxy.answered)
        model.stop()
        proxy.stop()
        await close_s3_clients()


@dataclass
class _Faults:
    proxy: S3FaultProxy
    phases: Phases
    slow_answer_seconds: float

    def begin(self) -> None:
        self._enter(0)

    async def run_out(self, began: float, deadline: float) -> None:
        """Go through the phases (the first begun at `began`), then let the store answer again. A
        503 phase lasts until it has refused a write too, so the fault always meets one in flight."""
        end = began
        for index, (kind, seconds) in enumerate(self.phases):
            end += seconds
            self._enter(index)
            await asyncio.sleep(max(0.0, end - time.monotonic()))
            if kind == "unavailable":
                await until(lambda: self.proxy.answered["503 to a write"] > 0, deadline)
                end = max(end, time.monotonic())
        self.proxy.restore()

    def _enter(self, index: int) -> None:
        kind = self.phases[index][0]
        if kind == "unavailable":
            self.proxy.unavailable()
        else:
            self.proxy.slow(self.slow_answer_seconds)


async def _fault_and_recover(
    tools: ToolRuns,
    faults: _Faults,
    env: dict[str, str],
    conversations: int,
    tool_seconds: float,
    deadline: float,
    seen: S3FaultSeen,
) -> tuple[float, int, int, int]:
    """seconds_to_recover, lost, doubled, stuck."""
    command = counted(f"echo started >> started.log; sleep {tool_seconds:g}; seq 1 {OUTPUT_LINES}")
    ids = await tools.start(conversations, command, deadline)
    before, during = ids[: conversations // 2], ids[conversations // 2 :]
    await tools.approve(*before)
    await until(lambda: all(tools.runs(cid, "started.log") for cid in before), deadline)
    began = time.monotonic()
    faults.begin()  # the tools decided before are running: their results meet the fault
    seen.decided_during_fault = [tools.request(cid) for cid in during]
    seen.cli_during = await _cli(env, "approve", *seen.decided_during_fault)
    await faults.run_out(began, deadline)
    ended = time.monotonic()
    # The tools may run during the fault (the ledger and the read model are fine); their results
    # wait for the store: decisions flow again once a turn decided during the fault has ended.
    flowing = await until(lambda: any(tools.projected_idle(cid) for cid in during), deadline)
    recovered = round(time.monotonic() - ended, 2) if flowing else deadline
    stuck = await tools.stuck(deadline)
    lost, doubled = await tools.lost_and_doubled()
    seen.tool_messages = tools.tool_messages
    return recovered, lost, doubled, stuck


async def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "starter.py", *args]
    return await asyncio.to_thread(
        subprocess.run, command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=90
    )
