"""Which workspace a conversation's tools use, chosen once at the start of each run.

A new conversation gets its own (keyed by its id); a subagent is given its parent's key, so the
whole tree works on one set of files; a continued run is given the key its previous run used.
Conversations started before workspaces were per conversation keep the shared directory (key
None) for their whole life: their history replays without the patch marker, and the choice
travels across continue-as-new as `shared_workspace`.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import ConversationInput


def choose_workspace(start: ConversationInput) -> str | None:
    """The run's workspace key; call it once, before the run's first command."""
    if start.workspace is not None or start.shared_workspace:
        return start.workspace
    return start.conversation_id if workflow.patched(patches.WORKSPACE_PER_CONVERSATION) else None


def workspace_fields(key: str | None) -> dict[str, Any]:
    """The ConversationInput fields that hand the key on (to the next run or to a subagent)."""
    return {"workspace": key, "shared_workspace": key is None}
