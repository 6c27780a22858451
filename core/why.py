"""Why the agent wants a call: the request it works on, what it said just before, what was decided before.

Pure, built in workflow code from the transcript and the approval book when a request is asked,
and stored with the request, so a person who decides sees the reason the model gave next to
what the call does. Every text is the model's or a person's and is shown escaped, never run.
"""

from __future__ import annotations

from pydantic import Field

from core.wire_model import WireModel

MAX_WHY_CHARS = 2_000  # what a card keeps of each text
MAX_EARLIER = 10  # the most recent earlier decisions a card lists


class EarlierDecision(WireModel):
    request_id: str
    tool_name: str
    resolution: str
    decided_by: str | None = None
    reason: str | None = None


class WhyContext(WireModel):
    user_message: str | None = Field(default=None, description="the user's message that started the turn")
    assistant_text: str | None = Field(default=None, description="what the assistant said just before the call")
    earlier: list[EarlierDecision] = Field(default_factory=list, description="this conversation's earlier decisions")
    parent_task: str | None = Field(default=None, description="a subagent's task, as its parent gave it")


def _clip(text: str | None) -> str | None:
    if not text or not text.strip():
        return None
    text = text.strip()
    return text if len(text) <= MAX_WHY_CHARS else text[:MAX_WHY_CHARS] + " …"


def why_for(
    user_message: str | None,
    assistant_text: str | None,
    earlier: list[EarlierDecision],
    parent_task: str | None = None,
) -> WhyContext:
    return WhyContext(
        user_message=_clip(user_message),
        assistant_text=_clip(assistant_text),
        earlier=[item.model_copy(update={"reason": _clip(item.reason)}) for item in earlier[-MAX_EARLIER:]],
        parent_task=_clip(parent_task),
    )
