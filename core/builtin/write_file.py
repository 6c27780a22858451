"""write_file: a workspace file replaced by the text given, its directories made.

Asked by default; its preview is the diff against the file as the tool would see it, an approved
call writes only over the content that preview read (activities/file_state.py runs that checked
write in the tool activity), and what it replaced is kept so a person can undo it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.builtin.tool import PATH, BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace

_IS_DIR = 12
# $1 the path; the content arrives on stdin.
_WRITE = r"""
p=$1
case $p in */*) mkdir -p -- "${p%/*}" || exit 1 ;; esac
[ -d "$p" ] && exit 12
exec cat > "$p"
"""


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    from activities.beneath import write_beneath
    from activities.file_tools import FileToolError, beneath, failed, in_sandbox

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


TOOL = BuiltinTool(
    name="write_file",
    description="Write text to a workspace file, replacing it.",
    permission_type="write",
    arguments={"path": PATH, "content": {"type": "string"}},
    main="path",
    effect="file_write",
    content="content",
    preview=True,
    stale_check=True,
    undo=True,
    run=run,
)
