"""A small file system of a test's own for the data directory, to fill and free while the system runs.

Where the machine allows (root, `mount` permitted) it is a size-limited tmpfs mounted on a
directory: `fill()` writes a filler file until the disk answers "No space left on device",
`free()` deletes it. Where mount is refused it falls back to a file size limit (RLIMIT_FSIZE) on
the processes that write there: `fill()` lowers the limit of every process handed to `limit()`
to 0 (CPython ignores SIGXFSZ, so a write fails with "File too large" instead of killing it) and
every process started while it is full gets the same limit (`preexec`); `free()` raises them
again. Either way the processes see their writes refused and then taken again, without a restart.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from pathlib import Path
from typing import Literal

How = Literal["auto", "mount", "rlimit"]
_CHUNK = 1 << 20


class SmallVolume:
    def __init__(self, path: Path, size_bytes: int = 32 * _CHUNK, how: How = "auto") -> None:
        self.path = path
        self.size_bytes = size_bytes
        self.how = how
        self.mounted = False
        self.full = False
        self._limits: dict[int, int] = {}  # pid -> its own soft limit, given back by free()
        self._filler = path / ".filler"

    @property
    def kind(self) -> str:
        """How the fault is made: "tmpfs" or "rlimit"."""
        return "tmpfs" if self.mounted else "rlimit"

    def open(self) -> SmallVolume:
        self.path.mkdir(parents=True, exist_ok=True)
        if self.how != "rlimit":
            mount = ["mount", "-t", "tmpfs", "-o", f"size={self.size_bytes}", "tmpfs", str(self.path)]
            try:
                done = subprocess.run(mount, capture_output=True, text=True, timeout=30)
            except OSError as err:  # no mount(8) on this machine
                done = subprocess.CompletedProcess(mount, 1, "", str(err))
            self.mounted = done.returncode == 0
            if not self.mounted and self.how == "mount":
                raise RuntimeError(f"cannot mount a tmpfs on {self.path}: {done.stderr.strip()}")
        return self

    def limit(self, pid: int) -> None:
        """A process that writes to the volume: with no file system of its own (rlimit), `fill`
        limits its file sizes."""
        self._limits[pid] = resource.prlimit(pid, resource.RLIMIT_FSIZE)[0]
        if self.full and not self.mounted:
            _set_file_limit(pid, 0)

    def preexec(self) -> None:
        """For subprocess.Popen(preexec_fn=...): a process started while the volume is full meets it full."""
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if self.full and not self.mounted:
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))

    def fill(self) -> None:
        """Until nothing more fits (or, without a mount, until the processes may write nothing)."""
        self.full = True
        if not self.mounted:
            for pid in self._limits:
                _set_file_limit(pid, 0)
            return
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            chunk = _CHUNK
            while chunk:
                try:
                    os.write(fd, b"\0" * chunk)
                except OSError:
                    chunk //= 2  # the last pages of the disk, down to one byte
        finally:
            os.close(fd)

    def free(self) -> None:
        self.full = False
        if not self.mounted:
            for pid, soft in self._limits.items():
                _set_file_limit(pid, soft)
            return
        with contextlib.suppress(FileNotFoundError):
            self._filler.unlink()

    def close(self) -> None:
        self.free()
        if self.mounted:
            # Lazily: a process of the test that still holds a file there lets go when it ends.
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, timeout=30)
            self.mounted = False

    def __enter__(self) -> SmallVolume:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _set_file_limit(pid: int, soft: int) -> None:
    """The soft limit only: the hard one stays where it was, so it can be raised again."""
    with contextlib.suppress(ProcessLookupError):
        _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (soft, hard))
