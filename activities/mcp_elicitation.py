"""MCP elicitation answered in the inbox: a server's `elicitation/create` during a call becomes a
question card; the person's answer (accept with content, decline, cancel) goes back to the server.

The question is written to the read model (storage/elicitations.py) and the asking call polls it
for the answer while its activity heartbeats (the call is awaited inside the heartbeating loop).
Unanswered within the server's `elicitation_timeout_seconds` (by default three quarters of its
call timeout, so the call itself is still waiting), the call records and returns a decline.
The capability is declared to a server only when a desk exists, that is in a worker, whose read
model is the inbox's: `starter.py tools` and other listings offer no answer and say none.

A question names the call that asked it. Calls share a connection, so while exactly one call of
that connection is in flight the question is its; with several in flight the asker cannot be told
apart, and the question is declined rather than shown under the wrong call.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from core.tool_model import ToolDef
from storage import elicitations
from storage.store import ProjectionStore

if TYPE_CHECKING:
    from mcp import types

POLL_SECONDS = 0.5
DEFAULT_TIMEOUT_SHARE = 0.75
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Asker:
    """The call a question belongs to."""

    conversation_id: str
    request_id: str
    tool: ToolDef
    arguments: dict[str, Any]


class ElicitationDesk:
    def __init__(self, store: ProjectionStore, poll_seconds: float = POLL_SECONDS) -> None:
        self._store = store
        self._poll = poll_seconds

    async def ask(self, asker: Asker | None, params: Any, timeout_seconds: float) -> types.ElicitResult:
        from mcp import types  # loaded by the connection that asks; a worker without MCP never needs it

        if asker is None:
            log.warning("an MCP elicitation arrived while several calls (or none) were in flight: declined")
            return types.ElicitResult(action="decline")
        if not isinstance(params, types.ElicitRequestFormParams):
            log.warning("MCP server %s asked to open a URL, which the inbox does not do: declined", asker.tool.origin)
            return types.ElicitResult(action="decline")
        now = datetime.now(UTC)
        question_id = f"elicit-{uuid.uuid4().hex}"
        question: dict[str, Any] = {
            "question_id": question_id,
            "conversation_id": asker.conversation_id,
            "request_id": asker.request_id,
            "server": asker.tool.origin,
            "tool_name": asker.tool.name,
            "tool": asker.tool.model_dump(mode="json"),
            "arguments": asker.arguments,
            "message": params.message,
            "schema": params.requested_schema,
            "asked_at": now.isoformat(),
            "expires_at": (now + timedelta(seconds=timeout_seconds)).isoformat(),
        }
        await elicitations.ask(self._store, question)
        try:
            answer = await self._wait(question_id, timeout_seconds)
        except BaseException:
            # The call ended first (canceled, its conversation closed): the card must not wait on.
            await asyncio.shield(elicitations.answer(self._store, question, "cancel", None, "call ended"))
            raise
        if answer is None:
            answer = await elicitations.answer(self._store, question, "decline", None, "timeout")
        if answer["action"] == "accept":
            return types.ElicitResult(action="accept", content=answer.get("content") or {})
        return types.ElicitResult(action=answer["action"])

    async def _wait(self, question_id: str, timeout_seconds: float) -> dict[str, Any] | None:
        deadline = asyncio.get_running_loop().time() + timeout_seconds
        while True:
            found = await elicitations.answer_of(self._store, question_id)
            if found is not None:
                return found
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            await asyncio.sleep(min(self._poll, left))


def timeout_for(call_timeout: float, configured: float | None) -> float:
    return configured if configured is not None else call_timeout * DEFAULT_TIMEOUT_SHARE
