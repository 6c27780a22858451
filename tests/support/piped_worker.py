"""`python worker.py` whose log reaches its file through a pipe this process copies.

A worker whose own writes are refused (a file size limit standing in for a full disk) could not
write its log file either; through a pipe its log lines, the ones that name the refused writes,
still arrive.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tests.support.processes import REPO_ROOT, _kill


class PipedWorker:
    def __init__(self, env: dict[str, str], log_file: Path, preexec: Callable[[], None] | None = None) -> None:
        self.env = env
        self.log_file = log_file
        self._preexec = preexec
        self.proc: subprocess.Popen[bytes] | None = None
        self._copier: threading.Thread | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None, "start() the worker first"
        return self.proc.pid

    def start(self) -> PipedWorker:
        self.proc = subprocess.Popen(
            [sys.executable, "worker.py"],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=self._preexec,
        )
        assert self.proc.stdout is not None
        self._copier = threading.Thread(target=_copy, args=(self.proc.stdout, self.log_file), daemon=True)
        self._copier.start()
        return self

    def log(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def wait_ready(self, timeout: float = 60.0) -> PipedWorker:
        deadline = time.monotonic() + timeout
        while "worker ready" not in self.log():
            if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                raise AssertionError(f"worker not ready: {self.log()[-2000:]}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        self._end(signal.SIGKILL)

    def _end(self, how: signal.Signals) -> None:
        _kill(self.proc, how)
        if self._copier is not None:
            self._copier.join(10)  # every line it wrote is in the file


def _copy(source: IO[bytes], log_file: Path) -> None:
    with log_file.open("ab") as out:
        for line in iter(source.readline, b""):
            out.write(line)
            out.flush()
    source.close()
