"""`leave`: a process ends with its own status and its output flushed, whatever threads still run."""

from __future__ import annotations

import subprocess
import sys

from tests.support.processes import REPO_ROOT

# A thread that never ends, as the SDK's core threads may still be busy: a normal exit would wait for
# it forever (and, with the core's threads, could abort in finalisation).
BUSY_PROCESS = """
import sys, threading, time
from config.process_exit import leave
threading.Thread(target=lambda: time.sleep(3600)).start()
sys.stdout.write("work done")  # buffered: only a flush makes it out
sys.stderr.write("said on stderr")
leave({code})
"""

# The same, told to leave only once its reader is gone.
READER_GONE_PROCESS = """
import sys, threading, time
from config.process_exit import leave
threading.Thread(target=lambda: time.sleep(3600)).start()
sys.stdout.write("work done")
sys.stderr.write("written\\n")
sys.stderr.flush()
sys.stdin.readline()
leave(0)
"""


def run(code: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BUSY_PROCESS.format(code=code)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_status_is_the_one_given_and_nothing_buffered_is_lost() -> None:
    for code in (0, 3):
        done = run(code)
        assert (done.returncode, done.stdout, done.stderr) == (code, "work done", "said on stderr")


def test_a_reader_gone_before_the_flush_is_no_error() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", READER_GONE_PROCESS],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    assert child.stderr.readline() == b"written\n"
    child.stdout.close()  # as `starter.py show X | head -0` would, once the output is buffered
    child.stdin.write(b"go\n")
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    assert child.stderr.read() == b""
    child.stderr.close()
