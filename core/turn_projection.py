"""The conversation row's write (its turn status, pending count and events), apart from the other
read-model payloads: the model call's and the tool listing's inputs carry a turn's end and start in it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from core.wire_model import WireModel

TurnStatus = Literal["idle", "running", "awaiting_approval", "failed", "closed"]


class ProjectionEvent(WireModel):
    """One ordered event for the UI; event_key makes a retried write a no-op."""

    event_key: str
    event_type: str
    conversation_id: str
    payload: dict[str, Any] = Field(default_factory=dict)


class ConversationProjection(WireModel):
    conversation_id: str
    turn_status: TurnStatus
    pending_count: int
    updated_at: datetime
    version: int = Field(description="increases with every write of one conversation; older writes lose")
    parent_id: str | None = Field(default=None, description="the conversation that delegated to this one")
    events: list[ProjectionEvent] = Field(default_factory=list)
