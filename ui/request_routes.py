"""The requests API: anything that speaks HTTP (a LangGraph agent, a CI job, a shell script) puts a
request in the inbox and waits for its answer (docs/requests.md, "From anything that speaks HTTP").

- `POST /api/requests`: the `ApprovalRequestInput` JSON plus `key`, the caller's idempotency key:
  starts the request, or finds the one that key started (201 new, 200 the same key again).
- `GET /api/requests/{id}?wait=SECONDS`: its status, and its `ApprovalResult` once decided (a
  long poll of at most 60 s).
- `DELETE /api/requests/{id}`: cancels a waiting request (it resolves `canceled`).

Each request is an `ApprovalRequest` workflow started through doors/ask.py, its id derived from
the asker and the key. The asker is the holder of an asking token (ui/asker_gate.py), else the
person whose token it is, else the body's `requester.agent`, else `http`. An asking token sees and
cancels only its own requests; it decides nothing anywhere.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import CancelledError
from temporalio.service import RPCError, RPCStatusCode

from core.contract import ERROR_UNKNOWN_REQUEST
from core.conversation_model import arguments_hash
from doors.ask import RPC_TIMEOUT, ask, cancel, outcome, request_id_for
from durable_approvals.types import APPROVAL_REQUEST_WORKFLOW, ApprovalRequestInput, ApprovalResult, Requester
from storage.store import ProjectionStore
from ui.asker_gate import asker_of
from ui.bodies import json_body, read_json_body
from ui.errors import Conflict, NotFound, ServiceUnavailable
from ui.route_support import client_of, settings_of, store_of
from ui.security import principal_of, require_same_origin, require_token

MAX_WAIT_SECONDS = 60.0
FIRST_ANSWER_SECONDS = 2.0  # a POST waits this long for a rule's answer (or the inbox row)
CANCEL_WAIT_SECONDS = 5.0
SHARED_ASKER = "http"


class AskBody(ApprovalRequestInput):
    key: str = Field(min_length=1, max_length=200, description="the idempotency key: the same key, the same request")


def require_asking(request: Request) -> None:
    """An asking token (admitted by the gate) or any credential the rest of the API takes."""
    if asker_of(request.scope) is None:
        require_token(request)


router = APIRouter(prefix="/api", dependencies=[Depends(require_asking), Depends(require_same_origin)])


async def asker_for(request: Request, body: AskBody) -> str:
    asker = asker_of(request.scope)
    if asker is not None:
        return asker
    principal = await principal_of(request)
    if principal is not None:
        return principal.name
    return body.requester.agent if body.requester is not None and body.requester.agent else SHARED_ASKER


def started_input(body: AskBody, asker: str) -> ApprovalRequestInput:
    """The workflow's input: the body without its key, the asker named as the requesting agent."""
    requester = (body.requester or Requester()).model_copy(update={"agent": asker})
    return ApprovalRequestInput.model_validate({**body.model_dump(exclude={"key"}), "requester": requester})


def unknown(request_id: str) -> NotFound:
    return NotFound(f"no request {request_id}", error_type=ERROR_UNKNOWN_REQUEST)


async def described(client: Client, request_id: str) -> WorkflowExecutionDescription | None:
    """The request's workflow, or None when Temporal knows no workflow of that id."""
    try:
        return await client.get_workflow_handle(request_id).describe(rpc_timeout=RPC_TIMEOUT)
    except RPCError as err:
        if err.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
            return None
        raise ServiceUnavailable(f"Temporal refused the request: {err.message}") from None


async def input_of(client: Client, request_id: str) -> ApprovalRequestInput:
    """The request's input, as its first history event holds it."""
    handle = client.get_workflow_handle(request_id)
    async for event in handle.fetch_history_events(page_size=1, rpc_timeout=RPC_TIMEOUT):
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        [started] = await client.data_converter.decode(payloads, [ApprovalRequestInput])
        return started  # type: ignore[no-any-return]
    raise unknown(request_id)


async def asked_by(client: Client, request_id: str) -> str | None:
    """The requesting agent named in the request's input."""
    requester = (await input_of(client, request_id)).requester
    return requester.agent if requester is not None else None


async def canceled_result(client: Client, request_id: str) -> ApprovalResult:
    """A canceled request ends its workflow canceled, without a result: this is the one it stands for."""
    arguments = (await input_of(client, request_id)).arguments
    description = await described(client, request_id)
    return ApprovalResult(
        request_id=request_id,
        decision="canceled",
        arguments=arguments,
        args_hash=arguments_hash(arguments),
        reason="the request was canceled",
        decided_at=description.close_time if description is not None else None,
    )


async def found(request: Request, client: Client, request_id: str) -> WorkflowExecutionDescription:
    """The request, when it is one and this caller may see it: an asker sees only its own."""
    description = await described(client, request_id)
    if description is None or description.workflow_type != APPROVAL_REQUEST_WORKFLOW:
        raise unknown(request_id)
    asker = asker_of(request.scope)
    if asker is not None and await asked_by(client, request_id) != asker:
        raise unknown(request_id)
    return description


async def answer(client: Client, request_id: str, wait_seconds: float) -> dict[str, Any]:
    """{request_id, status, result?}: pending, decided (with the result; a canceled request's too),
    or failed (an invalid request)."""
    try:
        result = await outcome(client, request_id, wait_seconds)
    except WorkflowFailureError as err:
        if not isinstance(err.cause, CancelledError):
            cause = err.cause if err.cause is not None else err
            return {"request_id": request_id, "status": "failed", "error": str(cause)}
        result = await canceled_result(client, request_id)
    except RPCError as err:
        raise ServiceUnavailable(f"Temporal refused the request: {err.message}") from None
    if result is None:
        return {"request_id": request_id, "status": "pending"}
    return {"request_id": request_id, "status": "decided", "result": result.model_dump(mode="json")}


async def first_answer(client: Client, store: ProjectionStore, request_id: str) -> dict[str, Any]:
    """The answer right after a POST: a rule decides at once, so wait for it a little; a request
    shown in the inbox waits for a person, so answer `pending` as soon as its row is there."""
    now = await answer(client, request_id, 0)
    if now["status"] != "pending":
        return now
    waiting = asyncio.ensure_future(answer(client, request_id, FIRST_ANSWER_SECONDS))
    try:
        while not waiting.done():
            if await store.approval(request_id) is not None:
                break
            await asyncio.wait({waiting}, timeout=0.1)
        return waiting.result() if waiting.done() else now
    finally:
        waiting.cancel()


@router.post("/requests", openapi_extra=json_body(AskBody))
async def post_request(request: Request) -> JSONResponse:
    """Start the request, or find the one this key started: 201 new, 200 the same key again."""
    body = await read_json_body(request, AskBody)
    asker = await asker_for(request, body)
    client = await client_of(request)
    request_id = request_id_for(asker, body.key)
    new = await described(client, request_id) is None
    try:
        await ask(client, settings_of(request), started_input(body, asker), body.key, asker)
    except RPCError as err:
        raise ServiceUnavailable(f"Temporal refused the request: {err.message}") from None
    document = await first_answer(client, store_of(request), request_id)
    return JSONResponse(document, status_code=201 if new else 200)


@router.get("/requests/{request_id}")
async def get_request(
    request: Request, request_id: str, wait: float = Query(default=0.0, ge=0, le=MAX_WAIT_SECONDS)
) -> dict[str, Any]:
    """Its status, and its result once decided; with `wait`, answers when it is decided or the wait ends."""
    client = await client_of(request)
    await found(request, client, request_id)
    return await answer(client, request_id, wait)


@router.delete("/requests/{request_id}")
async def delete_request(request: Request, request_id: str) -> dict[str, Any]:
    """Cancel a waiting request: it resolves `canceled`. 409 when it was decided first."""
    client = await client_of(request)
    description = await found(request, client, request_id)
    if description.status == WorkflowExecutionStatus.RUNNING:
        try:
            await cancel(client, request_id)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # NOT_FOUND: it ended meanwhile
                raise ServiceUnavailable(f"Temporal refused the cancel: {err.message}") from None
    ended = await answer(client, request_id, CANCEL_WAIT_SECONDS)
    decision = (ended.get("result") or {}).get("decision")
    if description.status != WorkflowExecutionStatus.RUNNING or decision not in (None, "canceled"):
        raise Conflict(
            f"request {request_id} is already decided: {decision or ended['status']}",
            extra={"result": ended.get("result")},
        )
    return ended
