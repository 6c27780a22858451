"""The transcript and the model call: messages, the tool calls in them, the model's request and reply."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from core.wire_model import WireModel


class ToolCall(WireModel):
    id: str
    name: str
    arguments: str = Field(description="the raw JSON text the model wrote, kept verbatim")


class ChatMessage(WireModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class TokenUsage(WireModel):
    """What the API counted for one call; absent when the server does not say."""

    prompt_tokens: int
    completion_tokens: int = 0


class LlmReply(ChatMessage):
    """call_llm's result: the assistant message plus the API's usage. The workflow stores only the
    ChatMessage part; a result recorded before usage existed decodes with usage None."""

    usage: TokenUsage | None = None

    def message(self) -> ChatMessage:
        return ChatMessage.model_validate(self.model_dump(exclude={"usage"}))


class ContextAnchor(WireModel):
    """The model's own count of the transcript's first `messages` messages, from the last usage."""

    messages: int
    tokens: int


LlmPurpose = Literal["reply", "summarise"]


class LlmRequest(WireModel):
    conversation_id: str
    turn_id: str
    messages: list[ChatMessage]
    tools: list[dict[str, Any]]
    purpose: LlmPurpose = Field(default="reply", description="summarise: a compaction's summary request")
