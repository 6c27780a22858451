"""The API of a team's controls: the conversation's switches (close, auto-approve), the audit
trail, and batch decisions; and who a decision is recorded as (`identity`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from temporalio.service import RPCError

from core.models import DecisionInput
from doors import control
from storage.audit import parse_since
from ui.bodies import AutoApproveBody, BatchDecisionBody, json_body, read_json_body
from ui.errors import NotFound, Unprocessable
from ui.security import principal_of, require_same_origin, require_token
from ui.temporal import rpc_error_to_http

router = APIRouter(prefix="/api", dependencies=[Depends(require_token), Depends(require_same_origin)])


def _require_id(value: str, what: str) -> None:
    if not value:
        raise NotFound(f"no {what} with an empty id")


@router.post("/conversations/{conversation_id:path}/close", status_code=202)
async def close_conversation(request: Request, conversation_id: str) -> dict[str, Any]:
    """Ends the conversation by signal; its waiting approvals resolve as canceled."""
    _require_id(conversation_id, "conversation")
    try:
        by = await _switcher(request)
        await control.close_conversation(await request.app.state.client_provider(), conversation_id, by, "ui")
    except RPCError as err:
        raise rpc_error_to_http(err, conversation_id) from None
    return {"conversation_id": conversation_id, "status": "closing"}


@router.post(
    "/conversations/{conversation_id:path}/auto-approve", status_code=202, openapi_extra=json_body(AutoApproveBody)
)
async def set_auto_approve(request: Request, conversation_id: str) -> dict[str, Any]:
    """Switches auto-approve by signal: every ask is allowed while on; deny rules still apply."""
    _require_id(conversation_id, "conversation")
    body = await read_json_body(request, AutoApproveBody)
    try:
        by, client = await _switcher(request), await request.app.state.client_provider()
        await control.set_auto_approve(client, conversation_id, body.enabled, by, "ui")
    except RPCError as err:
        raise rpc_error_to_http(err, conversation_id) from None
    return {"conversation_id": conversation_id, "auto_approve": body.enabled}


@router.get("/audit")
async def audit_trail(request: Request, since: str | None = None) -> list[dict[str, Any]]:
    """Every request and decision: who, through which door, on which arguments hash, and the outcome;
    and every switch (kind `switch`): who closed a conversation or switched its auto-approve, and how."""
    try:
        moment = parse_since(since) if since else None
    except ValueError as err:
        raise Unprocessable(f"since: {err}") from None
    return await request.app.state.store.audit_trail(moment)


@router.post("/approvals/decisions", openapi_extra=json_body(BatchDecisionBody))
async def decide_batch(request: Request) -> dict[str, Any]:
    """Several calls in one action: each gets its own claim and signal, and its own result; a refused
    call (unknown, decided, stale) does not stop the others."""
    body = await read_json_body(request, BatchDecisionBody)
    who = await identity(request, body.name)
    decisions = [
        DecisionInput(
            request_id=item.request_id,
            decision=body.decision,
            reason=body.reason or None,
            args_hash=item.args_hash,
            door="ui",
            **who,
        )
        for item in body.items
    ]
    results = await control.send_batch(
        await request.app.state.client_provider(), request.app.state.settings, decisions, request.app.state.store
    )
    return {
        "decision": body.decision,
        "results": [
            {
                "request_id": r.request_id,
                "conversation_id": r.conversation_id,
                "status": "sent" if r.error_type is None else "refused",
                "error": None if r.error_type is None else {"type": r.error_type, "message": r.message},
            }
            for r in results
        ],
    }


async def _switcher(request: Request) -> str | None:
    """Who flips a switch: the signed-in person; None when the page is used with the shared token only."""
    principal = await principal_of(request)
    return None if principal is None else principal.name


async def identity(request: Request, name: str | None) -> dict[str, Any]:
    """Who decides: a person's own token names them (a typed name is ignored); otherwise the typed
    name, or `web`, with no verified principal (enough only for calls no approver rule covers)."""
    principal = await principal_of(request)
    if principal is None:
        return {"decided_by": name or "web"}
    return {"decided_by": principal.name, "principal": principal.name, "groups": principal.groups}
