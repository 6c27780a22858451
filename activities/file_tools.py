"""What the built-in file tools (core/builtin/) share: each call is a small process in the same
sandbox as run_shell, where only the workspace and the system directories exist, so a link a
command planted or flips meanwhile can at worst point at the sandbox's own empty /tmp or its own
/proc, never at the worker's environment, its data or another conversation's files. The worker
never opens the path itself; the check by name before (Workspace.resolve) is there for a clear
message only.

With the sandbox turned off by the user, the tools open the path in the worker, on a thread,
below a handle of the workspace without following any link (activities/beneath.py, `beneath`).

A tool's own script and its reading of the script's exit status are in its definition; here are
the launch, the errors the model reads, and the read limit's refusal ([tools] max_read_bytes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from activities.beneath import LinkRefused
from activities.sandbox_run import Finished, run_sandboxed
from activities.tool_text import byte_size, truncate
from activities.workspaces import Workspace

FILE_TOOL_TIMEOUT_SECONDS = 60.0


class FileToolError(ValueError):
    """The call was refused or failed; the message is the model's answer (shown as an error)."""


def too_big(path: str, size: int, limit: int) -> FileToolError:
    return FileToolError(
        f"{path} is {byte_size(size)}, over the read limit of {byte_size(limit)} ([tools] max_read_bytes); "
        "nothing was read. Read a part of it with run_shell (head -c, tail, sed -n) instead."
    )


def as_text(path: str, data: bytes) -> str:
    """The model gets text: a file with NUL bytes is named as binary instead of shown."""
    if b"\x00" in data:
        raise FileToolError(
            f"{path} is a binary file ({byte_size(len(data))}); read_file shows text only. "
            "Inspect it with run_shell (file, od -c | head) instead."
        )
    return truncate(data.decode(errors="replace"))


def failed(what: str, path: str, done: Finished) -> FileToolError:
    if done.returncode is None:
        return FileToolError(f"{what} {path} took longer than {FILE_TOOL_TIMEOUT_SECONDS:g} seconds and was stopped")
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return FileToolError(f"could not {what} {path}: {lines[-1] if lines else f'exit status {done.returncode}'}")


async def in_sandbox(
    ws: Workspace, script: str, args: list[str], beat: Callable[[], None], stdin: bytes | None = None
) -> Finished:
    argv = ["/bin/sh", "-c", script, "file-tool", *args]
    return await run_sandboxed(argv, ws.root, ws.sandbox, beat, FILE_TOOL_TIMEOUT_SECONDS, stdin=stdin, ready=ws.ready)


async def beneath(function: Callable[..., Any], ws: Workspace, *args: Any, missing_ok: bool = True) -> Any:
    """An in-process open below the workspace, on a thread; a missing path is None when missing_ok."""
    ws.root.mkdir(parents=True, exist_ok=True)
    try:
        return await asyncio.to_thread(function, ws.root.resolve(), *args)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise
    except LinkRefused as err:
        raise FileToolError(str(err)) from None
