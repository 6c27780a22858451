"""What every scenario shares: one dev server, one scripted model, worker subprocesses, checks.

Everything listens on free ports and lives in one temporary directory, so a bench run never
meets another engineer's dev server or database.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from temporalio.client import Client

from activities.workspaces import CONVERSATIONS_DIR
from bench import script
from bench.devserver import BenchServer
from config.settings import Settings
from demo_model.server import ScriptedModelServer
from tests.support.postgres import PostgresServer
from tests.support.processes import REPO_ROOT, process_env

DEFAULT_CACHE = 1000  # the SDK's default max_cached_workflows
APPROVAL_TIMEOUT = 7 * 24 * 3600.0

_T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[bench {time.monotonic() - _T0:7.1f}s] {message}", flush=True)


@dataclass
class BenchWorker:
    """A worker subprocess whose memory we can read and which we can SIGKILL."""

    proc: subprocess.Popen[bytes]
    log_file: Path

    def wait_ready(self, timeout: float = 60.0) -> BenchWorker:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_file.exists() and b"ready" in self.log_file.read_bytes():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early; see {self.log_file}")
            time.sleep(0.05)
        raise TimeoutError(f"worker not ready after {timeout}s; see {self.log_file}")

    def rss(self) -> int:
        return int(psutil.Process(self.proc.pid).memory_info().rss)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


@dataclass
class Check:
    name: str
    expected: Any
    actual: Any

    @property
    def ok(self) -> bool:
        return bool(self.expected == self.actual)


@dataclass
class Bench:
    root: Path
    server: BenchServer
    client: Client
    model: ScriptedModelServer
    checks: list[Check] = field(default_factory=list)
    workers: list[BenchWorker] = field(default_factory=list)
    # Conversations one scenario leaves waiting for the next (parked -> recovery), to save a setup.
    shared: dict[str, Any] = field(default_factory=dict)
    # An export of an earlier revision: the latency scenario runs its worker too ("before").
    baseline: Path | None = None
    _postgres: PostgresServer | None = None

    def postgres_database(self) -> str:
        """A fresh database on the run's one PostgreSQL server, started the way the tests start it."""
        return self.postgres_server().new_database()

    def postgres_server(self) -> PostgresServer:
        """The run's one PostgreSQL server itself, for a scenario that restarts it (faults)."""
        if self._postgres is None:
            self._postgres = PostgresServer().start()
        return self._postgres

    def postgres_pid(self) -> int | None:
        """The run's PostgreSQL server (its postmaster), once a scenario started it."""
        if self._postgres is None:
            return None
        return int((self._postgres.data / "postmaster.pid").read_text().split()[0])

    def close(self) -> None:
        if self._postgres is not None:
            self._postgres.stop()

    def settings(self, name: str, payload_threshold: int | None = None, backend: str = "sqlite") -> Settings:
        """A fresh task queue, projection and workspace for one scenario phase (its projection and
        ledger on `backend`); one payload store for the whole run (the bench's client reads what any
        worker stored)."""
        home = self.root / f"{name}-{uuid.uuid4().hex[:6]}"
        home.mkdir(parents=True)
        settings = Settings(
            payload_store=str(payload_dir(self.root)),
            temporal_address=self.server.address,
            task_queue=f"bench-{name}-{uuid.uuid4().hex[:6]}",
            approvals_db=self.postgres_database() if backend == "postgresql" else home / "approvals.db",
            workspace_dir=home / "workspace",
            openai_base_url=self.model.base_url,
            openai_api_key="bench-key",
            llm_model="scripted-bench",
            approval_timeout=APPROVAL_TIMEOUT,
        )
        if payload_threshold is None:
            return settings
        return dataclasses.replace(settings, payload_store_threshold=payload_threshold)

    def start_worker(
        self,
        settings: Settings,
        kind: str = "ours",
        cache: int = DEFAULT_CACHE,
        checkout: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> BenchWorker:
        """checkout: run the worker from that source tree (the baseline) instead of this one;
        env: more variables for it (tracing, metrics)."""
        log = settings.workspace_dir.parent / f"worker-{kind}-{uuid.uuid4().hex[:4]}.log"
        # Workspace saves off unless a scenario turns them on (latency times both).
        extra = {"WORKSPACE_SAVES": "off", "TEMPORAL_NAMESPACE": settings.namespace, **(env or {})}
        if checkout is not None:
            extra["PYTHONPATH"] = str(checkout)
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker_main", "--kind", kind, "--cache", str(cache)],
            cwd=checkout or REPO_ROOT,
            env=process_env(settings, self.server.address, **extra),
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        worker = BenchWorker(proc, log)
        self.workers.append(worker)
        return worker.wait_ready()

    def check(self, name: str, expected: Any, actual: Any) -> bool:
        found = Check(name, expected, actual)
        self.checks.append(found)
        say(f"check {name}: expected {expected!r}, got {actual!r} -> {'ok' if found.ok else 'FAILED'}")
        return found.ok

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.kill()
        self.workers.clear()


def payload_dir(root: Path) -> Path:
    return root / "payloads"


def ran_counts(settings: Settings) -> dict[str, int]:
    """How many times the approved tool really ran, per conversation tag (lines in ran.log): in
    each conversation's own workspace, and in the shared one (the floor's activity, older runs)."""
    root = settings.workspace_dir
    counts: dict[str, int] = {}
    for path in [root / script.RAN_LOG, *sorted((root / CONVERSATIONS_DIR).glob(f"*/{script.RAN_LOG}"))]:
        if path.exists():
            for line in path.read_text().split():
                counts[line] = counts.get(line, 0) + 1
    return counts
