"""read_file, write_file and list_dir, opened where a symlink can reach nothing of the worker's.

Each call is a small process in the same sandbox as run_shell: inside it only the workspace and
the system directories exist, so a link a command planted or flips meanwhile can at worst point
at the sandbox's own empty /tmp or its own /proc, never at the worker's environment, its data
or another conversation's files. The worker never opens the path itself; the check by name
before (Workspace.resolve) is there for a clear message only.

With the sandbox turned off by the user, the tools open the path in the worker, on a thread,
below a handle of the workspace without following any link (activities/beneath.py).

read_file reads at most the workspace's read limit ([tools] max_read_bytes): a bigger file is
refused with its size, unread, and a file holding NUL bytes is reported as binary, not shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from activities.beneath import LinkRefused, list_beneath, read_beneath, write_beneath
from activities.sandbox_run import Finished, run_sandboxed
from activities.tool_text import byte_size, truncate
from activities.workspaces import Workspace

FILE_TOOL_TIMEOUT_SECONDS = 60.0
# Exit codes of the scripts below (the launchers pass the script's own status through).
_IS_DIR, _NOT_FILE, _TOO_BIG, _NOT_DIR = 12, 13, 14, 15

# $1 the path, $2 the limit. `head -c` bounds the read even if the file changes after `stat`.
_READ = r"""
p=$1; limit=$2
[ -d "$p" ] && exit 12
[ -f "$p" ] || exit 13
size=$(stat -L -c %s -- "$p") || exit 13
if [ "$size" -gt "$limit" ]; then printf %s "$size" >&2; exit 14; fi
exec head -c "$((limit + 1))" -- "$p"
"""
# $1 the path; the content arrives on stdin.
_WRITE = r"""
p=$1
case $p in */*) mkdir -p -- "${p%/*}" || exit 1 ;; esac
[ -d "$p" ] && exit 12
exec cat > "$p"
"""
_LIST = r"""
[ -d "$1" ] || exit 15
cd -- "$1" && LC_ALL=C exec ls -A1p
"""


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


async def read_file(ws: Workspace, kv: object, args: dict[str, Any], beat: Callable[[], None]) -> str:
    path, limit = args["path"], ws.max_read_bytes
    ws.resolve(path)
    if not ws.sandbox.enabled:
        return _read_in_process(ws, path, await beneath(read_beneath, ws, path, limit))
    done = await in_sandbox(ws, _READ, [path, str(limit)], beat)
    if done.returncode in (_IS_DIR, _NOT_FILE):
        return f"Error: {path} does not exist or is not a file"
    if done.returncode == _TOO_BIG:
        reported = done.stderr.split()[-1:]  # the script's last word: the size it found
        raise too_big(path, int(reported[0]) if reported and reported[0].isdigit() else limit + 1, limit)
    if done.returncode != 0:
        raise failed("read", path, done)
    if len(done.stdout) > limit:  # it grew between the size check and the read
        raise too_big(path, len(done.stdout), limit)
    return as_text(path, done.stdout)


def _read_in_process(ws: Workspace, path: str, outcome: Any) -> str:
    if outcome is None or outcome.kind != "file":
        return f"Error: {path} does not exist or is not a file"
    if outcome.data is None:
        raise too_big(path, outcome.size, ws.max_read_bytes)
    return as_text(path, outcome.data)


async def write_file(ws: Workspace, kv: object, args: dict[str, Any], beat: Callable[[], None]) -> str:
    path, data = args["path"], args["content"].encode()
    ws.resolve(path)
    if not ws.sandbox.enabled:
        await ws.ready()
        await beneath(write_beneath, ws, path, data, missing_ok=False)
        return f"Wrote {len(data)} bytes to {path}"
    done = await in_sandbox(ws, _WRITE, [path], beat, stdin=data)
    if done.returncode == _IS_DIR:
        raise FileToolError(f"{path} is a directory")
    if done.returncode != 0:
        raise failed("write", path, done)
    return f"Wrote {len(data)} bytes to {path}"


async def list_dir(ws: Workspace, kv: object, args: dict[str, Any], beat: Callable[[], None]) -> str:
    path = args["path"]
    ws.resolve(path)
    if not ws.sandbox.enabled:
        entries = await beneath(list_beneath, ws, path)
    else:
        done = await in_sandbox(ws, _LIST, [path], beat)
        if done.returncode not in (0, _NOT_DIR):
            raise failed("list", path, done)
        entries = None if done.returncode == _NOT_DIR else done.stdout.decode(errors="replace").splitlines()
    if entries is None:
        return f"Error: {path} is not a directory"
    return truncate("\n".join(entries)) if entries else "(empty directory)"


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
