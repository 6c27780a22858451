"""MCP servers' questions to people (elicitation), kept in the read model's event log.

A question is an `elicitation.asked` event (its key names the question); its answer is one
`elicitation.answered` event whose key is the question's own, written once: the first answer
wins, whoever gives it (a person in the inbox, or the asking call's own timeout, which answers
decline). The asking activity polls for that answer. Neither needs Temporal's history: a question
lives only as long as the call that asked it, and a rebuild of the read model does not bring it
back (a call still waiting then declines at its timeout).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from core.projection_model import ProjectionEvent
from storage.backend import Tx
from storage.store import ProjectionStore

EVENT_ASKED = "elicitation.asked"
EVENT_ANSWERED = "elicitation.answered"
ACTIONS = ("accept", "decline", "cancel")


def _asked_key(question_id: str) -> str:
    return f"elicit:{question_id}:asked"


def _answer_key(question_id: str) -> str:
    return f"elicit:{question_id}:answer"


async def ask(store: ProjectionStore, question: dict[str, Any]) -> None:
    """question: question_id, conversation_id, request_id, server, tool_name, message, schema, expires_at."""
    await store.append_stream_event(
        ProjectionEvent(
            event_key=_asked_key(question["question_id"]),
            event_type=EVENT_ASKED,
            conversation_id=question["conversation_id"],
            payload=question,
        )
    )


async def answer(
    store: ProjectionStore, question: dict[str, Any], action: str, content: dict[str, Any] | None, by: str
) -> dict[str, Any]:
    """Record an answer unless one is there already; the answer that stands (this one or the first)."""
    await store.append_stream_event(
        ProjectionEvent(
            event_key=_answer_key(question["question_id"]),
            event_type=EVENT_ANSWERED,
            conversation_id=question["conversation_id"],
            payload={"question_id": question["question_id"], "action": action, "content": content, "by": by},
        )
    )
    found = await answer_of(store, question["question_id"])
    assert found is not None
    return found


async def _payload(store: ProjectionStore, key: str) -> dict[str, Any] | None:
    async def operation(tx: Tx) -> dict[str, Any] | None:
        row = await tx.fetchone("SELECT payload_json FROM ui_events WHERE event_key = ?", (key,))
        return None if row is None else dict(json.loads(row["payload_json"]))

    return await store.backend.run(operation, write=False)


async def answer_of(store: ProjectionStore, question_id: str) -> dict[str, Any] | None:
    return await _payload(store, _answer_key(question_id))


async def question(store: ProjectionStore, question_id: str) -> dict[str, Any] | None:
    """The question with its answer (None while it waits)."""
    found = await _payload(store, _asked_key(question_id))
    if found is None:
        return None
    return {**found, "answer": await answer_of(store, question_id)}


async def open_questions(store: ProjectionStore, limit: int = 200) -> list[dict[str, Any]]:
    """Questions with no answer yet and not past their deadline, oldest first (one whose worker
    died before it could record the decline is past its deadline, and no longer shown)."""

    async def operation(tx: Tx) -> list[dict[str, Any]]:
        rows = await tx.fetchall(
            """SELECT asked.payload_json FROM ui_events asked
               WHERE asked.event_type = ? AND NOT EXISTS (
                 SELECT 1 FROM ui_events answered
                 WHERE answered.event_key = replace(asked.event_key, ':asked', ':answer'))
               ORDER BY asked.event_id LIMIT ?""",
            (EVENT_ASKED, limit),
        )
        return [dict(json.loads(r["payload_json"])) for r in rows]

    now = datetime.now(UTC)
    found = await store.backend.run(operation, write=False)
    return [q for q in found if datetime.fromisoformat(q["expires_at"]) > now]
