"""Undoing an approved write_file: what is asked, what the undo plans, and when it must refuse.

Pure. An undo writes back the exact bytes the approved write replaced (kept by the tool's activity,
storage/previous_content.py), as a write_file request of its own: asked, approved, audited and
bound like any other. It refuses when the file changed again since the approved write, and then
shows the three states: what it was, what the approved write made of it, and what it is now.
"""

from __future__ import annotations

import difflib

from pydantic import Field

from core.previews import EffectPreview
from core.wire_model import WireModel

UNDO_CALL_PREFIX = "undo-"


class UndoInput(WireModel):
    request_id: str = Field(description="the approved write_file request to undo")
    by: str | None = Field(default=None, description="who asks for the undo, as the door knew them")
    door: str | None = None


class UndoResult(WireModel):
    request_id: str | None = Field(default=None, description="the undo's own request, asked like any call")
    refused: str | None = None
    three_way: str | None = Field(default=None, description="a refusal's before / approved / now differences")


class PrepareUndoInput(WireModel):
    conversation_id: str
    request_id: str
    workspace: str | None = None


class UndoPlan(WireModel):
    """What the prepare activity found: a refusal, or the write that restores the previous bytes."""

    refused: str | None = None
    three_way: str | None = None
    path: str | None = None
    content: str | None = None
    preview: EffectPreview | None = None


def _diff(a: bytes, b: bytes, a_name: str, b_name: str) -> str:
    old = a.decode(errors="replace").splitlines(True)
    new = b.decode(errors="replace").splitlines(True)
    lines = difflib.unified_diff(old, new, a_name, b_name, n=2)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines) or "(no difference)\n"


def three_way(path: str, before: bytes, approved: bytes | None, now: bytes | None) -> str:
    """The three states of a file an undo will not touch: before the write, as written, as it is now."""
    if approved is None or now is None:
        return f"{path}: the approved write's content or the current content is not available to compare\n"
    return (
        f"== what the approved write changed ({path}: before -> as written)\n"
        + _diff(before, approved, f"before/{path}", f"written/{path}")
        + f"== what changed since ({path}: as written -> now)\n"
        + _diff(approved, now, f"written/{path}", f"now/{path}")
    )


def undo_note(by: str | None, original: str, path: str) -> str:
    """What the model is told in its next turn."""
    return (
        f"{by or 'A person'} undid the approved write_file of {path} ({original}): "
        "the file has its previous content again."
    )
