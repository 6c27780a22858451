"""Real processes for end-to-end and crash tests: a dev server on a database file, workers to kill.

Each piece starts as `make run` starts it (same commands, same environment variables), on
free ports, so tests can SIGKILL and restart any of them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from config.temporal_server import dev_server_args
from payload_store import data_converter
from tests.conftest import binary

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout}s")


def process_env(settings: Settings, temporal_address: str, **extra: str) -> dict[str, str]:
    """The environment variables the README lists, as a worker or CLI subprocess reads them."""
    env = dict(os.environ)
    env.update(
        TEMPORAL_ADDRESS=temporal_address,
        TASK_QUEUE=settings.task_queue,
        APPROVALS_DB=str(settings.approvals_db),
        WORKSPACE_DIR=str(settings.workspace_dir),
        OPENAI_BASE_URL=settings.openai_base_url,
        OPENAI_API_KEY=settings.openai_api_key,
        LLM_MODEL=settings.llm_model,
        APPROVAL_TIMEOUT=str(settings.approval_timeout),
        PAYLOAD_STORE=settings.payload_store_location,
        PAYLOAD_STORE_THRESHOLD=str(settings.payload_store_threshold),
        LLM_STREAM="on" if settings.llm_stream else "off",
        PYTHONUNBUFFERED="1",
    )
    if settings.s3_endpoint_url:
        env["AWS_ENDPOINT_URL"] = settings.s3_endpoint_url
    if settings.policy_file is not None:
        env["POLICY_FILE"] = settings.policy_file
    env.update(extra)
    return env


async def run_cli(
    settings: Settings, client: Client, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python starter.py ARGS` as a user runs it, against the test's dev server (off the event loop,
    so an in-process worker keeps running)."""
    env = process_env(settings, client.service_client.config.target_host, **(env_extra or {}))
    command = [sys.executable, "starter.py", *args]
    return await asyncio.to_thread(
        subprocess.run, command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=90
    )


@dataclass
class DevServer:
    """`temporal server start-dev` on a SQLite file, so a kill and restart keeps the history
    (with no file, in memory: the fastest store, for runs that never restart the server)."""

    db_file: Path | None
    log_file: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> DevServer:
        command = [
            binary("temporal"),
            "server",
            "start-dev",
            *(["--db-filename", str(self.db_file)] if self.db_file is not None else []),
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--headless",
            "--log-level",
            "error",
            "--search-attribute",
            "TurnStatus=Keyword",
            "--search-attribute",
            "PendingApprovals=Int",
            *dev_server_args(),
        ]
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_port(self.port)
        return self

    async def client(self, settings: Settings | None = None) -> Client:
        """A client with the converter (and payload store) of the given settings."""
        converter = data_converter(settings)
        deadline = time.monotonic() + 60
        while True:
            try:
                client = await Client.connect(self.address, data_converter=converter)
                await client.count_workflows()
                return client
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    def kill(self) -> None:
        _kill(self.proc, signal.SIGKILL)

    def stop(self) -> None:
        _kill(self.proc, signal.SIGTERM)


@dataclass
class WorkerProcess:
    """`python worker.py` with the contract's environment variables."""

    env: dict[str, str]
    log_file: Path
    proc: subprocess.Popen[bytes] | None = None
    command_prefix: list[str] | None = None  # e.g. a new UTS namespace with another host name
    cwd: Path | None = None  # another checkout's worker (an earlier release); this one by default
    python: str | None = None  # another interpreter (one an unprivileged user can run); this one by default

    def start(self) -> WorkerProcess:
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            [*(self.command_prefix or []), self.python or sys.executable, "worker.py"],
            cwd=self.cwd or REPO_ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def wait_ready(self, timeout: float = 60.0) -> WorkerProcess:
        """Until the worker logs that it polls its task queues (or fail with its log)."""
        deadline = time.monotonic() + timeout
        while "worker ready" not in self.log_file.read_text(errors="replace"):
            if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                raise AssertionError(f"worker not ready: {self.log_file.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        return self

    def kill(self) -> None:
        _kill(self.proc, signal.SIGKILL)

    def stop(self) -> None:
        _kill(self.proc, signal.SIGTERM)


def _kill(proc: subprocess.Popen[bytes] | None, sig: signal.Signals) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
