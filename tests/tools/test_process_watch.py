"""A worker on Python 3.11 watches its tools' processes through pidfds, as 3.12 does: no thread per
process waits in `waitpid`, and a process killed by its group still reports how it ended."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from activities import process_watch
from tests.support.processes import REPO_ROOT

# Runs in a fresh interpreter: the child watcher is a process-wide setting.
PROBE = """
import asyncio, json, os, signal, sys, threading
from activities.process_watch import watch_children_by_pidfd

async def main(pidfd):
    chosen = watch_children_by_pidfd() if pidfd else None
    proc = await asyncio.create_subprocess_exec("sleep", "0.3", stdout=asyncio.subprocess.PIPE)
    waiting = [t.name for t in threading.enumerate() if "waitpid" in t.name]
    await proc.communicate()
    killed = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
    os.killpg(killed.pid, signal.SIGKILL)
    await killed.wait()
    print(json.dumps({"chosen": chosen, "waiting": waiting, "ended": proc.returncode, "killed": killed.returncode}))

asyncio.run(main(sys.argv[1] == "pidfd"))
"""


def probe(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return dict(json.loads(done.stdout))


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 watches children by pidfd by itself")
def test_a_worker_on_3_11_waits_for_its_tools_without_a_thread_each() -> None:
    assert probe("pidfd") == {"chosen": True, "waiting": [], "ended": 0, "killed": -9}
    before = probe("threads")  # what the worker did before: a thread blocked per running process
    assert len(before["waiting"]) == 1 and before["ended"] == 0  # type: ignore[arg-type]


def test_a_kernel_without_pidfds_keeps_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int, flags: int = 0) -> int:
        raise PermissionError("pidfd_open refused by the seccomp profile")

    set_watcher: list[object] = []
    monkeypatch.setattr(os, "pidfd_open", refused)
    monkeypatch.setattr(asyncio, "set_child_watcher", set_watcher.append)
    assert process_watch.watch_children_by_pidfd() is False
    assert set_watcher == []
