"""The read model's payloads: the rows and events the projection activities write for the UI."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from core.chat_model import ChatMessage
from core.conversation_model import ApprovalRecord
from core.turn_projection import ConversationProjection as ConversationProjection
from core.turn_projection import ProjectionEvent as ProjectionEvent
from core.wire_model import WireModel


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
