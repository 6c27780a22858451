"""The system as `make run` runs it, in real processes, for tests that drive the CLI like a user.

A dev server on a SQLite file, the demo model as `python -m demo_model`, `python worker.py`, and
`python starter.py ...` as subprocesses: each on a free port, each killable on its own. Waiting
reads the projection in-process and runs the CLI once the answer can be yes (a CLI run costs a
Python start, half a CPU-second).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from config.settings import Settings
from tests.support.helpers import pending_rows, rows
from tests.support.processes import REPO_ROOT, WorkerProcess, _kill, free_port, process_env, wait_for_port

T = TypeVar("T")


def until(check: Callable[[], T | None], *, timeout: float = 60.0, interval: float = 0.2) -> T:
    """check()'s first truthy result; on timeout fail with its last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s; last: {last!r}")
        time.sleep(interval)


@dataclass
class DemoModelProcess:
    """`python -m demo_model` on a free port; counts the requests it answered at /v1/stats."""

    log_file: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> DemoModelProcess:
        log = self.log_file.open("ab")
        command = [sys.executable, "-m", "demo_model", "--port", str(self.port), "--chunk-delay", "0"]
        self.proc = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for_port(self.port)
        return self

    def request_count(self) -> int:
        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=10) as response:
            return int(json.load(response)["requests"])

    def stop(self) -> None:
        _kill(self.proc, signal.SIGTERM)


@dataclass
class Stack:
    """One user's system on a shared dev server: its own task queue, projection, workspace, model."""

    settings: Settings
    env: dict[str, str]
    model: DemoModelProcess
    worker_log: Path
    worker: WorkerProcess | None = None

    def start_worker(self) -> WorkerProcess:
        self.worker = WorkerProcess(self.env, self.worker_log).start()
        return self.worker

    def cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "starter.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def cli_ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = self.cli(*args)
        assert done.returncode == 0, f"{args} exited {done.returncode}: {done.stderr}"
        return done

    def cli_many(self, commands: Sequence[Sequence[str]], parallel: int = 4) -> list[subprocess.CompletedProcess[str]]:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            return list(pool.map(lambda args: self.cli(*args), commands))

    def pending(self, conversation_id: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = json.loads(
            self.cli_ok("pending", "--conversation", conversation_id, "--json").stdout
        )
        return rows

    def show(self, conversation_id: str, timeout: float = 5.0) -> dict[str, Any]:
        done = self.cli_ok("show", conversation_id, "--json", "--timeout", str(timeout))
        state: dict[str, Any] = json.loads(done.stdout)
        return state

    def wait_status(self, conversation_id: str, status: str, timeout: float = 60.0) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            if self._projected_status(conversation_id) != status:
                return None  # the projection follows the worker: no CLI run until it could answer yes
            done = self.cli("show", conversation_id, "--json", "--timeout", "1")
            assert done.returncode == 0, f"show {conversation_id} exited {done.returncode}: {done.stderr}"
            state: dict[str, Any] = json.loads(done.stdout)
            return state if state["source"] == "worker" and state["turn_status"] == status else None

        return until(check, timeout=timeout, interval=0.1)

    def wait_pending(self, conversation_id: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        def check() -> list[dict[str, Any]] | None:
            if len(pending_rows(self.settings.approvals_db, conversation_id)) != count:
                return None  # read in-process; the CLI runs once the table could satisfy it
            listed = self.pending(conversation_id)
            return listed if len(listed) == count else None

        return until(check, timeout=timeout, interval=0.1)

    def _projected_status(self, conversation_id: str) -> str | None:
        found = rows(
            self.settings.approvals_db,
            "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?",
            conversation_id,
        )
        return str(found[0]["turn_status"]) if found else None

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        self.model.stop()


def make_stack(tmp: Path, temporal_address: str, database: str | Path | None = None) -> Stack:
    """database: the projection's location (default: a SQLite file in tmp)."""
    model = DemoModelProcess(tmp / "demo_model.log").start()
    settings = Settings(
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=database or tmp / "approvals.db",
        workspace_dir=tmp / "workspace",
        openai_base_url=model.base_url,
        openai_api_key="demo-key",
        llm_model="scripted-demo",
        approval_timeout=3600.0,
    )
    env = process_env(settings, temporal_address)
    return Stack(settings, env, model, tmp / "worker.log")


def one_line(stderr: str) -> str:
    """The CLI's refusal or usage error: exactly one non-empty line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {stderr!r}"
    return lines[0]
