"""The read model's payloads: the rows and events the projection activities write for the UI."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from core.chat_model import ChatMessage
from core.conversation_model import ApprovalRecord, TurnStatus
from core.wire_model import WireModel


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


class ArchivedMessage(WireModel):
    seq: int = Field(description="position in the full transcript (1 is the first message after the system prompt)")
    message: ChatMessage


class CompactionProjection(WireModel):
    """Messages leaving the model's transcript, archived for people before the workflow drops them."""

    messages: list[ArchivedMessage]
    conversation: ConversationProjection


class ApprovalRequestedProjection(WireModel):
    approval: ApprovalRecord
    kv_snapshot: dict[str, Any]
    conversation: ConversationProjection


class ApprovalResolvedProjection(WireModel):
    approval: ApprovalRecord
    conversation: ConversationProjection
