"""The pre-screen's verdict on one call, as the workflow records it (on the request, for the card
and `show`); kept apart from core/prescreen.py so the request's own model
(core/conversation_model.py) can hold it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.wire_model import WireModel

PrescreenAnswer = Literal["allow", "ask", "deny"]
PRESCREEN_ANSWERS: tuple[PrescreenAnswer, ...] = ("allow", "ask", "deny")


class PrescreenVerdict(WireModel):
    """What the pre-screen said about one call; `error` set means it failed and the verdict is `ask`."""

    verdict: PrescreenAnswer
    reason: str
    model: str
    latency_ms: float
    error: str | None = Field(default=None, description="why it failed (timed out, HTTP 500, malformed answer)")
