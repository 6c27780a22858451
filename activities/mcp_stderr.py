"""A stdio MCP server's stderr: forwarded to the worker's log as before, its last lines kept.

When a server exits at start, those last lines are the only explanation there is (`Cannot find
module ...`); they go into the error the listing reports, so `starter.py tools`, the conversation's
system note and the worker log all say why.
"""

from __future__ import annotations

import collections
import os
import re
import sys
import threading
from typing import BinaryIO, TextIO

TAIL_LINES = 40  # kept; the reason shows the last SHOWN_LINES of them
SHOWN_LINES = 15
_FRAME = re.compile(r"^\s+at \S")  # a JavaScript stack frame: many, and rarely the reason
LINE_CHARS = 400


def _worker_stderr() -> TextIO:
    """The worker's stderr (its log); a captured stream without a file descriptor falls back to the real one."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr


class StderrTail:
    """One server process's stderr: a pipe whose write end the process gets, read by a thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lines: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        read_fd, write_fd = os.pipe()
        self.file: TextIO = os.fdopen(write_fd, "w")  # handed to the process as its stderr
        self._reader = threading.Thread(
            target=self._pump, args=(os.fdopen(read_fd, "rb"),), name=f"mcp-stderr-{name}", daemon=True
        )
        self._reader.start()

    def _pump(self, stream: BinaryIO) -> None:
        forward = _worker_stderr()
        with stream:
            for raw in stream:
                line = raw.decode(errors="replace").rstrip("\n")
                self._lines.append(line[:LINE_CHARS])
                try:
                    forward.write(f"[mcp {self.name}] {line}\n")
                    forward.flush()
                except (OSError, ValueError):
                    pass

    def release(self) -> None:
        """Close the worker's copy of the write end (the process keeps its own)."""
        if not self.file.closed:
            self.file.close()

    def last_lines(self, wait_seconds: float = 2.0) -> list[str]:
        """The last kept lines, stack frames folded into one; after release, waits a moment for an
        exited process's last words."""
        if self.file.closed:
            self._reader.join(wait_seconds)
        shown: list[str] = []
        for line in self._lines:
            if not line.strip():
                continue
            if _FRAME.match(line):
                if shown and shown[-1].endswith("(stack frames left out)"):
                    continue
                line = "    at ... (stack frames left out)"
            shown.append(line)
        return shown[-SHOWN_LINES:]
