"""The question routes of the API: MCP servers' questions to people (elicitation), and answers.

A question waits in the read model while the asking call polls for its answer
(activities/mcp_elicitation.py). An answer is accept (with content valid by the server's schema),
decline or cancel; the first one recorded wins, and one past the question's deadline is refused
(the call has declined by then). Who may answer is who may decide the call: the approvers its
approval request recorded, or, for a call no one had to approve, those the policy's approver
rules name for it (`mcp__SERVER__TOOL`); anyone when no rule names anyone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import jsonschema
from fastapi import Request
from pydantic import Field

from core.approvers import approvers_for, may_decide
from core.contract import ERROR_ALREADY_RESOLVED, ERROR_NOT_AN_APPROVER, ERROR_QUESTION_EXPIRED
from core.tool_model import ToolDef
from storage import elicitations
from ui.bodies import StrictBody, json_body, read_json_body
from ui.errors import Conflict, Forbidden, NotFound, Unprocessable
from ui.route_support import api_router, identity, require_id, settings_of, store_of

router = api_router()


class AnswerBody(StrictBody):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = Field(default=None, description="with accept: the answer, by its schema")
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who answers; default web")


@router.get("/elicitations")
async def list_questions(request: Request) -> list[dict[str, Any]]:
    """Questions waiting for an answer, oldest first."""
    return await elicitations.open_questions(store_of(request))


@router.get("/elicitations/{question_id:path}")
async def get_question(request: Request, question_id: str) -> dict[str, Any]:
    require_id(question_id, "question")
    found = await elicitations.question(store_of(request), question_id)
    if found is None:
        raise NotFound(f"no question {question_id}")
    return found


async def _approvers(request: Request, question: dict[str, Any]) -> list[str] | None:
    row = await store_of(request).approval(question["request_id"])
    if row is not None:
        approvers: list[str] | None = row.get("approvers")
        return approvers
    tool = ToolDef.model_validate(question["tool"])
    return approvers_for(settings_of(request).load_policy(), tool, question.get("arguments") or {})


def _answered(question_id: str, answer: dict[str, Any]) -> Conflict:
    by = f" by {answer['by']}" if answer.get("by") else ""
    return Conflict(f"{question_id} was already answered: {answer['action']}{by}", error_type=ERROR_ALREADY_RESOLVED)


@router.post("/elicitations/{question_id:path}/answer", openapi_extra=json_body(AnswerBody))
async def answer_question(request: Request, question_id: str) -> dict[str, Any]:
    require_id(question_id, "question")
    body = await read_json_body(request, AnswerBody)
    store = store_of(request)
    question = await elicitations.question(store, question_id)
    if question is None:
        raise NotFound(f"no question {question_id}")
    if question["answer"] is not None:
        raise _answered(question_id, question["answer"])
    if datetime.fromisoformat(question["expires_at"]) <= datetime.now(UTC):
        raise Conflict(f"{question_id} expired; the call declined it", error_type=ERROR_QUESTION_EXPIRED)
    who = await identity(request, body.name)
    approvers = await _approvers(request, question)
    if not may_decide(approvers, who.get("principal"), who.get("groups") or []):
        raise Forbidden(
            f"{who['decided_by']} may not answer {question_id}: only {', '.join(approvers or [])}",
            error_type=ERROR_NOT_AN_APPROVER,
        )
    content = body.content if body.action == "accept" else None
    if body.action == "accept":
        try:
            jsonschema.validate(content or {}, question["schema"])
        except jsonschema.ValidationError as err:
            raise Unprocessable(f"the answer does not fit the question: {err.message}") from None
        except jsonschema.SchemaError as err:
            raise Unprocessable(f"the server's schema is not valid: {err.message}") from None
    standing = await elicitations.answer(store, question, body.action, content, who["decided_by"])
    if standing["by"] != who["decided_by"] or standing["action"] != body.action:
        raise _answered(question_id, standing)
    return {"question_id": question_id, "status": "answered", "answer": standing}
