"""The session-end check fails a run whose test left a process behind, and kills it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
LEAKY = """
import subprocess, pathlib
def test_leaves_a_sleeper(tmp_path):
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    pathlib.Path({pid_file!r}).write_text(str(proc.pid))
"""
CONFTEST = "from tests.support.leftovers import check_session_end, mark_this_run\nmark_this_run()\n\n" + (
    "def pytest_sessionfinish(session, exitstatus):\n    check_session_end(session)\n"
)


def test_a_run_that_leaves_a_process_fails_and_the_process_is_gone(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_leaky.py").write_text(LEAKY.format(pid_file=str(pid_file)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LEFTOVER_GRACE_SECONDS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "outlived the tests" in done.stdout and "sleep 300" in done.stdout
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the leftover was not killed"
        time.sleep(0.1)
