"""How a process that used the Temporal client ends: flush, then `os._exit`.

The SDK's core runs its own threads. If one of them is still busy while the interpreter finalises,
the process can abort (SIGABRT, exit status -6; sdk-python issue #300) after its work is done and
every store is closed. A worker stopped by a deploy must exit 0, and a CLI command its own status,
so every entry point leaves through `leave` once nothing is left to do.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn


def discard_stdout() -> None:
    """Point stdout at /dev/null, so what is still buffered for a closed pipe goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def leave(code: int) -> NoReturn:
    """Send buffered spans, flush both streams (a reader that went away is no error), and exit with
    `code` without finalising the interpreter."""
    from config.telemetry import shutdown_tracing

    shutdown_tracing()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
    with contextlib.suppress(BrokenPipeError):
        sys.stderr.flush()
    os._exit(code)
