"""The content a write_file would replace: read for the preview, checked right before the write.

Both run exactly as the file tools do (activities/file_tools.py): in the sandbox, where only the
workspace and the system directories exist, so a link to outside the workspace shows nothing of
the worker's; with the sandbox off, opened below the workspace's handle without following links.
The check and the write are one script in one sandbox: nothing the decision did not see is
overwritten, short of a change in the instant between the hash and the write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from activities.beneath import read_beneath, write_beneath
from activities.file_tools import FileToolError, beneath, failed, in_sandbox
from activities.workspaces import Workspace
from core.previews import ABSENT, content_hash

_IS_DIR, _MISSING, _TOO_BIG, _CHANGED, _NOT_FILE = 12, 13, 14, 16, 17
# The most a check reads in the worker, with the sandbox off, to hash a file over the read limit.
_CHECK_LIMIT = 256 * 1024 * 1024

# $1 the path, $2 the limit. A file over the limit is hashed, not read: "size hash" on stderr.
_CURRENT = r"""
p=$1; limit=$2
[ -d "$p" ] && exit 12
[ -e "$p" ] || exit 13
[ -f "$p" ] || exit 17
size=$(stat -L -c %s -- "$p") || exit 13
if [ "$size" -gt "$limit" ]; then h=$(sha256sum < "$p") || exit 1; printf '%s %s' "$size" "${h%% *}" >&2; exit 14; fi
exec head -c "$((limit + 1))" -- "$p"
"""
# $1 the path, $2 the hash the decision saw, $3 the most of the previous content to hand back (on
# stdout, for an undo); the new content arrives on stdin.
_WRITE_IF_UNCHANGED = r"""
p=$1; want=$2; limit=$3
case $p in */*) mkdir -p -- "${p%/*}" || exit 1 ;; esac
[ -d "$p" ] && exit 12
if [ -e "$p" ]; then h=$(sha256sum < "$p") || exit 1; h=${h%% *}; else h=absent; fi
if [ "$h" != "$want" ]; then printf %s "$h" >&2; exit 16; fi
if [ -e "$p" ]; then head -c "$((limit + 1))" -- "$p" || exit 1; fi
exec cat > "$p"
"""


@dataclass(frozen=True)
class Current:
    """What the path holds now: data None with a hash (too big, not shown) or with none (no file)."""

    data: bytes | None
    target_hash: str | None
    note: str | None = None
    size: int | None = None


class TargetChanged(Exception):
    """The file is not what the decision saw: nothing was written."""

    def __init__(self, path: str, now_hash: str) -> None:
        super().__init__(f"{path} changed after the call was asked")
        self.path = path
        self.now_hash = now_hash


async def current_content(ws: Workspace, path: str, beat: Callable[[], None]) -> Current:
    limit = ws.max_read_bytes
    ws.resolve(path)
    if not ws.sandbox.enabled:
        outcome = await beneath(read_beneath, ws, path, limit)
        if outcome is None:
            return Current(None, ABSENT)
        if outcome.kind != "file":
            return Current(None, None, f"{path} is not a regular file")
        if outcome.data is None:
            too_big = f"{outcome.size} bytes: too large to show"
            return Current(None, await _hash_in_process(ws, path), too_big, outcome.size)
        return Current(outcome.data, content_hash(outcome.data))
    done = await in_sandbox(ws, _CURRENT, [path, str(limit)], beat)
    if done.returncode == _MISSING:
        return Current(None, ABSENT)
    if done.returncode in (_IS_DIR, _NOT_FILE):
        return Current(None, None, f"{path} is not a regular file")
    if done.returncode == _TOO_BIG:
        size, _, digest = done.stderr.decode(errors="replace").strip().rpartition("\n")[-1].partition(" ")
        return Current(None, digest or None, f"{size} bytes: too large to show", int(size) if size.isdigit() else None)
    if done.returncode != 0:
        raise failed("read", path, done)
    if len(done.stdout) > limit:  # it grew between the size check and the read: bound to what was read
        return Current(None, content_hash(done.stdout), f"{len(done.stdout)}+ bytes: too large to show")
    return Current(done.stdout, content_hash(done.stdout))


async def _hash_in_process(ws: Workspace, path: str) -> str | None:
    outcome = await beneath(read_beneath, ws, path, _CHECK_LIMIT)
    if outcome is None:
        return ABSENT
    return content_hash(outcome.data) if outcome.data is not None and outcome.kind == "file" else None


@dataclass(frozen=True)
class Written:
    message: str
    previous: bytes | None  # what the write replaced; None: no file, or over the read limit


async def write_if_unchanged(
    ws: Workspace, path: str, data: bytes, expected_hash: str, beat: Callable[[], None]
) -> Written:
    """Write only when the file still hashes to expected_hash; TargetChanged otherwise."""
    ws.resolve(path)
    limit = ws.max_read_bytes
    if not ws.sandbox.enabled:
        outcome = await beneath(read_beneath, ws, path, _CHECK_LIMIT)
        now = ABSENT if outcome is None else (content_hash(outcome.data) if outcome.data is not None else None)
        if now != expected_hash:
            raise TargetChanged(path, now or "unreadable")
        await ws.ready()
        await beneath(write_beneath, ws, path, data, missing_ok=False)
        before = outcome.data if outcome is not None and outcome.data is not None else None
        return Written(f"Wrote {len(data)} bytes to {path}", before if before is None or len(before) <= limit else None)
    done = await in_sandbox(ws, _WRITE_IF_UNCHANGED, [path, expected_hash, str(limit)], beat, stdin=data)
    if done.returncode == _CHANGED:
        words = done.stderr.decode(errors="replace").split()
        raise TargetChanged(path, words[-1] if words else "unknown")
    if done.returncode == _IS_DIR:
        raise FileToolError(f"{path} is a directory")
    if done.returncode != 0:
        raise failed("write", path, done)
    kept = None if expected_hash == ABSENT or len(done.stdout) > limit else done.stdout
    return Written(f"Wrote {len(data)} bytes to {path}", kept)
