"""The undo's preparation, on the tool's host: find what the approved write replaced, and check
that the file is still what that write left, confined as the file tools are (activities/file_state.py)."""

from __future__ import annotations

from collections.abc import Callable

from activities.file_state import current_content
from activities.workspaces import Workspace
from core.previews import file_preview, unreadable_preview
from core.undo import PrepareUndoInput, UndoPlan, three_way
from storage.store import ProjectionStore


async def prepare_undo(
    ws: Workspace, store: ProjectionStore, request: PrepareUndoInput, beat: Callable[[], None]
) -> UndoPlan:
    rid = request.request_id
    kept = await store.previous_content(rid)
    if kept is None or kept.conversation_id != request.conversation_id:
        return UndoPlan(
            refused=f"nothing to undo for {rid}: not an approved write over an existing file of this"
            " conversation, or what it replaced is past its retention (UNDO_RETENTION_SECONDS)"
        )
    try:
        text = kept.before.decode()
    except UnicodeDecodeError:
        return UndoPlan(refused=f"{kept.path} was not text before {rid}: write_file cannot restore it")
    current = await current_content(ws, kept.path, beat)
    if current.target_hash != kept.after_hash:
        row = await store.approval(rid)
        ran = (row.get("edited_arguments") or row.get("arguments") or {}) if row else {}
        written = ran["content"].encode() if isinstance(ran.get("content"), str) else None
        return UndoPlan(
            refused=f"{kept.path} changed since {rid} wrote it: not undone (nothing was written)",
            three_way=three_way(kept.path, kept.before, written, current.data),
        )
    if current.data is None:
        preview = unreadable_preview(kept.path, kept.before, current.note or "not shown", kept.after_hash)
    else:
        preview = file_preview(kept.path, current.data, kept.before, target_hash=kept.after_hash)
    return UndoPlan(path=kept.path, content=text, preview=preview)
