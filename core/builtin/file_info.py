"""file_info: what a workspace path is (a file and its size, or a directory and its entry count),
read without opening the file's content.

The model learns a file's size before read_file refuses it as over the read limit, and whether a
path exists at all, with no approval: it reads no more than list_dir does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.builtin.tool import PATH, BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace

_MISSING, _OTHER = 13, 17
# $1 the path. Prints "directory ENTRIES" or "file BYTES"; `ls -q` keeps one line per entry.
_INFO = r"""
p=$1
if [ -d "$p" ]; then n=$(LC_ALL=C ls -A1q -- "$p" | wc -l) || exit 1; echo "directory $n"; exit 0; fi
[ -e "$p" ] || exit 13
[ -f "$p" ] || exit 17
exec stat -L -c 'file %s' -- "$p"
"""


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    from activities.file_tools import beneath, failed, in_sandbox

    path = args["path"]
    ws.resolve(path)
    if not ws.sandbox.enabled:
        found = await beneath(_look_beneath, ws, path)
    else:
        done = await in_sandbox(ws, _INFO, [path], beat)
        if done.returncode not in (0, _MISSING, _OTHER):
            raise failed("inspect", path, done)
        words = done.stdout.decode(errors="replace").split()
        found = ("other", 0) if done.returncode == _OTHER else None
        if done.returncode == 0 and len(words) == 2 and words[1].isdigit():
            found = (words[0], int(words[1]))
        elif done.returncode == 0:
            raise failed("inspect", path, done)
    return _said(path, found, ws.max_read_bytes)


def _look_beneath(root: Any, path: str) -> tuple[str, int]:
    """(kind, entries or bytes) below the workspace's root (a Path), no link followed, nothing read."""
    from activities.beneath import list_beneath, read_beneath

    outcome = read_beneath(root, path, 0)  # a limit of 0: the size, never the content
    if outcome.kind == "directory":
        return "directory", len(list_beneath(root, path) or [])
    return outcome.kind, outcome.size


def _said(path: str, found: tuple[str, int] | None, read_limit: int) -> str:
    from activities.tool_text import byte_size

    name = path if path != "." else "the workspace"
    if found is None:
        return f"Error: {path} does not exist"
    kind, count = found
    if kind == "directory":
        return f"{name}: a directory of {count} {'entry' if count == 1 else 'entries'}"
    if kind != "file":
        return f"{name}: neither a regular file nor a directory"
    size = byte_size(count) if count < 1024 else f"{byte_size(count)} ({count} bytes)"
    over = f"; over read_file's limit of {byte_size(read_limit)}" if count > read_limit else ""
    return f"{name}: a file of {size}{over}"


TOOL = BuiltinTool(
    name="file_info",
    description="Say what a workspace path is: a file and its size, or a directory and how many entries it holds.",
    permission_type="read",
    arguments={"path": PATH},
    main="path",
    effect="file_read",
    run=run,
)
