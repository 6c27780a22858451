"""The data directory's disk fills while decisions and tool runs are in flight, then gets room again.

The read model (APPROVALS_DB), the ledger (LEDGER_DB) and the payload store (PAYLOAD_STORE) live
where the scenario says: all three on one small volume (`data_dir`, how a deployment keeps them
by default) or one of them alone (tests/support/small_volume.py: a tmpfs, or a file size limit on
the worker and the CLI where mount is refused). Each conversation asks for one `run_shell` that
appends a line to a file in its workspace (off the volume), so a tool's runs are counted.

Half the requests are approved just before the disk fills: their tools are running when it does.
The other half are approved with the CLI while it is full, as a person would. Then the filler is
deleted; nothing is restarted. A decision the CLI said it could not record is sent again (what
its error tells the person to do), and the scenario counts what was lost, doubled or left stuck.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from temporalio.client import Client

from config.settings import Settings
from payload_store import data_converter
from tests.faults.outcome import FaultOutcome
from tests.faults.tool_runs import ToolRuns, counted, until
from tests.support.piped_worker import PipedWorker
from tests.support.processes import REPO_ROOT, process_env
from tests.support.small_volume import How, SmallVolume
from tests.support.stack import DemoModelProcess

Stores = Literal["data_dir", "read_model", "ledger", "payload_store"]
# Small enough that every model input (the transcript and the tools) goes to the payload store.
PAYLOAD_THRESHOLD = 1024


@dataclass
class DiskFullSeen:
    """What people saw: the CLI's answer to the decisions sent while the disk was full, the worker's
    log, and how many of those decisions' tools ran before the disk had room again."""

    volume_kind: str = ""  # "tmpfs" or "rlimit"
    decided_during_fault: list[str] = field(default_factory=list)
    cli_during: subprocess.CompletedProcess[str] | None = None
    ran_during_fault: int = 0
    worker_log: str = ""
    tool_messages: dict[str, list[str]] = field(default_factory=dict)


def _settings(workdir: Path, volume: Path, stores: Stores, model_url: str) -> Settings:
    def place(store: Stores) -> Path:
        return volume if stores in ("data_dir", store) else workdir / "data"

    payloads_on_volume = stores in ("data_dir", "payload_store")
    return Settings(
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=place("read_model") / "approvals.db",
        ledger_location=place("ledger") / "ledger.db",
        payload_store=str(place("payload_store") / "payloads"),
        # The store gets payloads only when it is on the volume: a fault of another store is then
        # that store's alone, even under a file size limit, which refuses every file the worker writes.
        payload_store_threshold=PAYLOAD_THRESHOLD if payloads_on_volume else 1 << 30,
        workspace_dir=workdir / "workspace",
        openai_base_url=model_url,
        openai_api_key="demo-key",
        llm_model="scripted-demo",
        approval_timeout=3600.0,
    )


async def run_disk_full(
    workdir: Path,
    temporal_address: str,
    *,
    conversations: int = 2,
    stores: Stores = "data_dir",
    how: How = "auto",
    fault_seconds: float = 3.0,
    tool_seconds: float = 1.0,
    deadline: float = 60.0,
    seen: DiskFullSeen | None = None,
) -> FaultOutcome:
    """Fill the disk of `stores` for `fault_seconds` while `conversations` decisions and tools are in
    flight (at least 2: half decided before, half during); `seen` collects what people saw."""
    seen = seen if seen is not None else DiskFullSeen()
    (workdir / "data").mkdir(parents=True, exist_ok=True)
    volume = SmallVolume(workdir / "volume", how=how).open()
    seen.volume_kind = volume.kind
    model = DemoModelProcess(workdir / "demo_model.log")
    settings = _settings(workdir, volume.path, stores, model.base_url)
    env = process_env(settings, temporal_address, WORKSPACE_SAVES="off", LEDGER_DB=str(settings.ledger_db))
    worker = PipedWorker(env, workdir / "worker.log", preexec=volume.preexec)
    try:
        worker.start()
        volume.limit(worker.pid)
        model.start()
        worker.wait_ready()
        client = await Client.connect(temporal_address, data_converter=data_converter(settings))
        tools = ToolRuns(client, settings)
        # The CLI meets the full disk where the read model is on it.
        cli = _Cli(env, volume.preexec if stores in ("data_dir", "read_model") else None)
        outcome = await _fill_and_free(tools, volume, cli, conversations, fault_seconds, tool_seconds, deadline, seen)
        return FaultOutcome(f"disk_full_{stores}", "sqlite", *outcome)
    finally:
        volume.free()
        worker.kill()  # nothing of it is needed any more: its conversations are done
        seen.worker_log = worker.log()
        model.stop()
        volume.close()


@dataclass
class _Cli:
    env: dict[str, str]
    preexec: Callable[[], None] | None

    async def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "starter.py", *args]
        return await asyncio.to_thread(
            subprocess.run,
            command,
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=90,
            preexec_fn=self.preexec,
        )


async def _fill_and_free(
    tools: ToolRuns,
    volume: SmallVolume,
    cli: _Cli,
    conversations: int,
    fault_seconds: float,
    tool_seconds: float,
    deadline: float,
    seen: DiskFullSeen,
) -> tuple[float, int, int, int]:
    """seconds_to_recover, lost, doubled, stuck."""
    command = counted(f"echo started >> started.log; sleep {tool_seconds:g}")
    ids = await tools.start(conversations, command, deadline)
    before, during = ids[: conversations // 2], ids[conversations // 2 :]
    await tools.approve(*before)
    await until(lambda: all(tools.runs(cid, "started.log") for cid in before), deadline)
    volume.fill()  # the tools decided before are running now
    filled = time.monotonic()
    seen.decided_during_fault = [tools.request(cid) for cid in during]
    seen.cli_during = await cli.run("approve", *seen.decided_during_fault)
    await asyncio.sleep(max(0.0, fault_seconds - (time.monotonic() - filled)))
    seen.ran_during_fault = sum(tools.runs(cid) for cid in during)
    volume.free()
    freed = time.monotonic()
    # A decision the CLI said it could not record is sent again, as its error line tells the person.
    await tools.approve(*(cid for cid in during if f"{tools.request(cid)}: not decided" in seen.cli_during.stderr))
    ran = await until(lambda: any(tools.runs(cid) for cid in during), deadline)
    recovered = round(time.monotonic() - freed, 2) if ran else deadline
    stuck = await tools.stuck(deadline)
    lost, doubled = await tools.lost_and_doubled()
    seen.tool_messages = tools.tool_messages
    return recovered, lost, doubled, stuck
