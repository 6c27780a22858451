"""read_file: a workspace file's text, at most the workspace's read limit ([tools] max_read_bytes).

A bigger file is refused with its size, unread; a file holding NUL bytes is named as binary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.builtin.tool import PATH, BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace

_IS_DIR, _NOT_FILE, _TOO_BIG = 12, 13, 14
# $1 the path, $2 the limit. `head -c` bounds the read even if the file changes after `stat`.
_READ = r"""
p=$1; limit=$2
[ -d "$p" ] && exit 12
[ -f "$p" ] || exit 13
size=$(stat -L -c %s -- "$p") || exit 13
if [ "$size" -gt "$limit" ]; then printf %s "$size" >&2; exit 14; fi
exec head -c "$((limit + 1))" -- "$p"
"""


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    from activities.beneath import read_beneath
    from activities.file_tools import as_text, beneath, failed, in_sandbox, too_big

    path, limit = args["path"], ws.max_read_bytes
    ws.resolve(path)
    if not ws.sandbox.enabled:
        outcome = await beneath(read_beneath, ws, path, limit)
        if outcome is None or outcome.kind != "file":
            return f"Error: {path} does not exist or is not a file"
        if outcome.data is None:
            raise too_big(path, outcome.size, limit)
        return as_text(path, outcome.data)
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


TOOL = BuiltinTool(
    name="read_file",
    description="Read a text file from the workspace.",
    permission_type="read",
    arguments={"path": PATH},
    main="path",
    effect="file_read",
    run=run,
)
