"""The preview activity's work: what an asked call will change, computed where the call would run.

Which built-ins have a preview, and of what effect, their definitions say (core/builtin/). A file
write's preview reads the file it would replace as the tool would see it. A plain file (no link
on its path, no `..`, on the workspace's filesystem, not hidden, owned by and open to the uid
tools run as) is read here, below the workspace's handle without following any link: the
sandbox would show the very same bytes, and a launch per preview is most of its cost. Anything
else is read in the sandbox, exactly as the tool would (activities/file_state.py). A shell
command's preview and an MCP tool's hints need no reading at all. A preview that cannot be made says why in
its note and binds nothing (no target hash): the card then shows the arguments alone.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from activities.beneath import Check, LinkRefused, read_beneath
from activities.file_state import Current, current_content
from activities.sandbox import SandboxUnavailable, hidden_inside, tool_uid
from activities.workspaces import Workspace
from core.previews import (
    ABSENT,
    EffectPreview,
    content_hash,
    file_preview,
    shell_preview,
    tool_preview,
    unpack_content,
    unreadable_preview,
)
from core.tool_run_model import PreviewInput
from core.tool_specs import InvalidToolCall, builtin_tool


async def preview_effect(ws: Workspace, request: PreviewInput, beat: Callable[[], None]) -> EffectPreview:
    args = request.arguments
    tool = builtin_tool(request.tool_name)  # None for a Python or MCP tool: named "python:..", "mcp:.."
    if tool is None or not tool.preview:
        return tool_preview(request.annotations)
    if tool.content is not None and request.packed_content is not None:
        args = {**args, tool.content: unpack_content(request.packed_content)}
    if tool.effect == "file_write":
        path, text = tool.written(args)
        after = text.encode()
        try:
            current = await _current(ws, path, beat)
        except (InvalidToolCall, SandboxUnavailable, ValueError, OSError) as err:
            return unreadable_preview(path, after, f"could not read the current content: {err}", None)
        if current.data is None and current.note is not None:
            return unreadable_preview(path, after, current.note, current.target_hash).model_copy(
                update={"size_before": current.size}
            )
        return file_preview(path, current.data, after, target_hash=current.target_hash)
    if tool.effect == "shell":
        return shell_preview(str(args.get(tool.main, "")), request.rule)
    return tool_preview(request.annotations)


async def _current(ws: Workspace, path: str, beat: Callable[[], None]) -> Current:
    ws.resolve(path)
    if ws.sandbox.enabled:
        here = await asyncio.to_thread(read_as_the_tool_sees, ws, path)
        if here is not None:
            return here
    return await current_content(ws, path, beat)


def read_as_the_tool_sees(ws: Workspace, path: str) -> Current | None:
    """A plain file's content (or its absence) read in this process; None: read it in the sandbox."""
    root = ws.root.resolve()
    target = Path(os.path.normpath(root / path))
    if ".." in PurePosixPath(path).parts or not root.is_dir():
        return None
    if any(target == hidden or target.is_relative_to(hidden) for hidden in hidden_inside(root, ws.sandbox)):
        return None
    try:
        uid = tool_uid(root, ws.sandbox)
        outcome = read_beneath(root, path, ws.max_read_bytes, _seen_alike(os.stat(root).st_dev, uid))
    except FileNotFoundError:
        return Current(None, ABSENT)
    except (LinkRefused, SandboxUnavailable, OSError):
        return None
    if outcome.kind != "file" or outcome.data is None:  # not a file, or too big: the sandbox says so
        return None
    return Current(outcome.data, content_hash(outcome.data))


def _seen_alike(device: int, uid: int | None) -> Check:
    """Refuses a handle the sandbox might show otherwise: another filesystem (a mount the sandbox's
    view may not hold), or one the uid tools run as does not own and may not read or search."""

    def check(fd: int) -> None:
        info = os.fstat(fd)
        if info.st_dev != device:
            raise LinkRefused("on another filesystem than the workspace")
        if uid is None:  # tools run as the worker's own uid: its rights are theirs
            return
        needed = stat.S_IXUSR if stat.S_ISDIR(info.st_mode) else stat.S_IRUSR
        if info.st_uid != uid or not info.st_mode & needed:
            raise LinkRefused("not the sandbox uid's to read")

    return check
