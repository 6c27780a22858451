"""The preview activity's work: what an asked call will change, computed where the call would run.

A write_file preview reads the file it would replace through activities/file_state.py, confined
as the tool itself is; a run_shell preview and an MCP tool's hints need no reading at all. A
preview that cannot be made says why in its note and binds nothing (no target hash): the card
then shows the arguments alone, as before previews.
"""

from __future__ import annotations

from collections.abc import Callable

from activities.file_state import current_content
from activities.sandbox import SandboxUnavailable
from activities.workspaces import Workspace
from core.models import PreviewInput
from core.previews import EffectPreview, file_preview, shell_preview, tool_preview, unreadable_preview
from core.tool_specs import InvalidToolCall


async def preview_effect(ws: Workspace, request: PreviewInput, beat: Callable[[], None]) -> EffectPreview:
    args = request.arguments
    if request.tool_name == "write_file":
        path, after = str(args.get("path", "")), str(args.get("content", "")).encode()
        try:
            current = await current_content(ws, path, beat)
        except (InvalidToolCall, SandboxUnavailable, ValueError, OSError) as err:
            return unreadable_preview(path, after, f"could not read the current content: {err}", None)
        if current.data is None and current.note is not None:
            return unreadable_preview(path, after, current.note, current.target_hash).model_copy(
                update={"size_before": current.size}
            )
        return file_preview(path, current.data, after, target_hash=current.target_hash)
    if request.tool_name == "run_shell":
        return shell_preview(str(args.get("command", "")), request.rule)
    return tool_preview(request.annotations)
