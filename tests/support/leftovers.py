"""No test leaves a process running: at the end of the session, every process this run started
(a child of the test process, or one that carries this run's marker in its environment after it
left its parent) must be gone. Leftovers are listed, killed, and fail the run."""

from __future__ import annotations

import contextlib
import os
import time
import uuid

import psutil
import pytest

MARKER = "APPROVALS_TEST_RUN"
# Servers stopped by the last teardowns may take a moment to exit.
GRACE_SECONDS = float(os.environ.get("LEFTOVER_GRACE_SECONDS", "10"))


def mark_this_run() -> None:
    """A marker of this process's run (each xdist worker sets its own), inherited by all it starts."""
    os.environ[MARKER] = uuid.uuid4().hex


def _ours(process: psutil.Process, marker: str, me: int) -> bool:
    try:
        if process.pid == me or process.status() == psutil.STATUS_ZOMBIE:
            return False
        return process.environ().get(MARKER) == marker
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def leftovers() -> list[psutil.Process]:
    """Processes of this run still alive, after the grace period."""
    marker, me = os.environ[MARKER], os.getpid()
    deadline = time.monotonic() + GRACE_SECONDS
    while True:
        found = {p.pid: p for p in psutil.Process(me).children(recursive=True) if p.is_running()}
        found.update({p.pid: p for p in psutil.process_iter() if _ours(p, marker, me)})
        alive = [p for p in found.values() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def describe(process: psutil.Process) -> str:
    try:
        return f"{process.pid} {' '.join(process.cmdline())[:200]}"
    except psutil.Error:
        return str(process.pid)


def check_session_end(session: pytest.Session) -> None:
    if session.config.pluginmanager.has_plugin("dsession"):
        return  # the xdist controller: its children are the workers, and each checks its own
    alive = leftovers()
    if not alive:
        return
    names = [describe(p) for p in alive]
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = f"{len(names)} process(es) outlived the tests (killed now):\n  " + "\n  ".join(names)
    if reporter is not None:
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
