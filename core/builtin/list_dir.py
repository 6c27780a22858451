"""list_dir: the entries of a workspace directory, directories marked with `/`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.builtin.tool import PATH, BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace

_NOT_DIR = 15
# $1 the path.
_LIST = r"""
[ -d "$1" ] || exit 15
cd -- "$1" && LC_ALL=C exec ls -A1p
"""


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    from activities.beneath import list_beneath
    from activities.file_tools import beneath, failed, in_sandbox
    from activities.tool_text import truncate

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


TOOL = BuiltinTool(
    name="list_dir",
    description="List the entries of a workspace directory.",
    permission_type="read",
    arguments={"path": PATH},
    main="path",
    effect="file_read",
    run=run,
)
