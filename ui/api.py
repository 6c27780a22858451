"""The HTTP API the README lists: listings from the projection, actions through Temporal."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from temporalio.client import Client
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from config.settings import Settings
from core.compaction import SUMMARY_NAME
from core.models import (
    ERROR_EDIT_DENIED,
    ERROR_INVALID_EDIT,
    ERROR_NOT_AN_APPROVER,
    ERROR_UNKNOWN_APPROVAL,
    DecisionInput,
)
from core.tool_registry import TOOLS_UNAVAILABLE_NAME
from doors import control
from doors.edit_control import ERROR_EDIT_UNCHECKED
from storage.claims import DecisionRefused
from storage.reader import BadCursor, Page
from storage.store import ProjectionStore
from ui import queries
from ui.bodies import (
    DecisionBody,
    MessageBody,
    StartBody,
    json_body,
    read_json_body,
)
from ui.errors import Conflict, Forbidden, HttpError, NotFound, ServiceUnavailable, Unprocessable
from ui.security import principal_of, require_same_origin, require_token
from ui.team import identity
from ui.temporal import WorkerUnavailable, query_state, rpc_error_to_http, status_from_search_attributes

router = APIRouter(prefix="/api", dependencies=[Depends(require_token), Depends(require_same_origin)])
# Ids may hold any character, "/" included: the page sends them percent-encoded, the server decodes
# them, and the :path converters take the rest of the path (the fixed suffix routes match first).


def _settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def _store(request: Request) -> ProjectionStore:
    return request.app.state.store  # type: ignore[no-any-return]


def _page_size(limit: int | None) -> int:
    if limit is None:
        return queries.DEFAULT_PAGE
    if not 1 <= limit <= queries.MAX_PAGE:
        raise Unprocessable(f"limit must be between 1 and {queries.MAX_PAGE}")
    return limit


def _paged(request: Request, response: Response, page: Page) -> list[dict[str, Any]]:
    """The body stays a plain list; the next page is named in `X-Next-Cursor` and a `Link` header."""
    if page.next is not None:
        response.headers["X-Next-Cursor"] = page.next
        response.headers["Link"] = f'<{request.url.include_query_params(after=page.next)}>; rel="next"'
    return page.items


async def _client(request: Request) -> Client:
    return await request.app.state.client_provider()  # type: ignore[no-any-return]


def _require_id(value: str, what: str) -> None:
    if not value:
        raise NotFound(f"no {what} with an empty id")


@router.get("/session")
async def session(request: Request) -> dict[str, Any]:
    """What the page needs to know about itself: whether a token guards it (then it offers to log out)."""
    principal = await principal_of(request)
    return {
        "token_required": _settings(request).ui_token is not None,
        "principal": None if principal is None else {"name": principal.name, "groups": principal.groups},
    }


@router.get("/conversations")
async def list_conversations(
    request: Request, response: Response, limit: int | None = None, after: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """Newest first, a page at a time (`?limit=&after=`), optionally one turn status (`?status=`)."""
    try:
        page = await queries.conversations(_store(request), _settings(request), _page_size(limit), after, status)
    except BadCursor as err:
        raise Unprocessable(str(err)) from None
    return _paged(request, response, page)


@router.post("/conversations", status_code=201, openapi_extra=json_body(StartBody))
async def start_conversation(request: Request) -> dict[str, Any]:
    body = await read_json_body(request, StartBody)
    settings = _settings(request)
    client = await _client(request)
    try:
        person = await principal_of(request)
        starter = person.name if person is not None else None
        conversation_id = await control.start_conversation(
            client, settings, body.message, body.conversation_id, started_by=starter
        )
    except WorkflowAlreadyStartedError:
        raise Conflict(f"conversation {body.conversation_id} already exists") from None
    except RPCError as err:
        raise ServiceUnavailable(f"Temporal refused to start the conversation: {err.message}") from None
    return {"conversation_id": conversation_id, "temporal_url": queries.temporal_url(settings, conversation_id)}


@router.get("/conversations/{conversation_id:path}")
async def get_conversation(request: Request, conversation_id: str) -> dict[str, Any]:
    """The workflow's own state when a worker answers; otherwise what the projection knows, and why."""
    _require_id(conversation_id, "conversation")
    settings = _settings(request)
    row, approvals = await _store(request).conversation_view(conversation_id)
    view: dict[str, Any] = {
        "conversation_id": conversation_id,
        "approvals": approvals,
        "temporal_url": queries.temporal_url(settings, conversation_id),
        "updated_at": row["updated_at"] if row else None,
    }
    try:
        client = await _client(request)
        state = await query_state(client, conversation_id)
    except (WorkerUnavailable, ServiceUnavailable, NotFound) as err:
        status = row["turn_status"] if row else None
        if status is None and isinstance(err, WorkerUnavailable):
            status = await status_from_search_attributes(client, conversation_id)
        if status is None:
            raise NotFound(f"no conversation {conversation_id}") from None
        return {**view, **_projection_only(err, status, approvals, row.get("last_error") if row else None)}
    dumped = state.model_dump(mode="json")
    # The system prompt stays hidden; a compaction's summary is shown, after the archived messages,
    # and so is the note that a tool source failed this turn (with its last words).
    shown = (SUMMARY_NAME, TOOLS_UNAVAILABLE_NAME)
    dumped["messages"] = [m for m in dumped["messages"] if m["role"] != "system" or m.get("name") in shown]
    archived = await _store(request).archived_messages(conversation_id)
    # Written before messages leave the workflow, the archive may be ahead of the state just read.
    dumped["archived"] = archived[: state.archived_messages]
    return {**view, **dumped, "worker_online": True, "notice": None}


def _projection_only(
    err: Exception, status: str, approvals: list[dict[str, Any]], last_error: str | None
) -> dict[str, Any]:
    """The conversation as far as it is known without a worker: status and approvals, no transcript."""
    notice = (
        "No worker answered, so the transcript is not available; this is what the approvals projection knows."
        if isinstance(err, WorkerUnavailable)
        else f"Temporal could not answer ({err}); this is what the approvals projection knows."
    )
    if status == "failed" and last_error:
        notice = f"The conversation failed, so the transcript is not available: {last_error}"
    return {
        "worker_online": False,
        "notice": notice,
        "turn_status": status,
        "turn_id": None,
        "messages": [],
        "archived": [],
        "pending_approvals": [a for a in approvals if a["status"] != "resolved"],
        "always_allow": [],
        "auto_approve": False,
        "last_error": last_error,
    }


@router.post("/conversations/{conversation_id:path}/messages", status_code=202, openapi_extra=json_body(MessageBody))
async def send_message(request: Request, conversation_id: str) -> dict[str, Any]:
    _require_id(conversation_id, "conversation")
    body = await read_json_body(request, MessageBody)
    try:
        await control.send_message(await _client(request), conversation_id, body.text)
    except RPCError as err:
        raise rpc_error_to_http(err, conversation_id) from None
    return {"conversation_id": conversation_id, "status": "sent"}


@router.get("/approvals")
async def list_approvals(
    request: Request,
    response: Response,
    status: queries.ApprovalStatus = "pending",
    conversation_id: str | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> list[dict]:
    """Oldest first, a page at a time (`?limit=&after=`)."""
    try:
        page = await queries.approvals(_store(request), status, conversation_id, _page_size(limit), after)
    except BadCursor as err:
        raise Unprocessable(str(err)) from None
    return _paged(request, response, page)


@router.get("/approvals/{request_id:path}")
async def get_approval(request: Request, request_id: str) -> dict[str, Any]:
    _require_id(request_id, "approval request")
    found = await _store(request).approval(request_id)
    if found is None:
        raise NotFound(f"no approval request {request_id}", error_type=ERROR_UNKNOWN_APPROVAL)
    return found


@router.post("/approvals/{request_id:path}/decision", openapi_extra=json_body(DecisionBody))
async def decide(request: Request, request_id: str) -> JSONResponse:
    """First decision wins at once (a claim in the projection), then goes to the workflow by signal."""
    _require_id(request_id, "approval request")
    body = await read_json_body(request, DecisionBody)
    settings, store = _settings(request), _store(request)
    if await store.approval(request_id) is None:
        raise NotFound(f"no approval request {request_id}", error_type=ERROR_UNKNOWN_APPROVAL)
    decision = DecisionInput(
        request_id=request_id,
        decision=body.decision,
        reason=body.reason or None,
        args_hash=body.args_hash,
        arguments=body.arguments,
        door="ui",
        **(await identity(request, body.name)),
    )
    client = await _client(request)
    try:
        await control.send_decision(client, settings, decision, store)
    except DecisionRefused as err:
        raise await _refusal(err, store, request_id) from None
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise Conflict(
                "the conversation is no longer running, so nothing can be decided", error_type="ConversationClosed"
            ) from None
        raise ServiceUnavailable(f"Temporal refused the decision: {err.message}") from None
    approval = await store.approval(request_id)
    return JSONResponse(
        {"request_id": request_id, "status": "sent", "decision": decision.model_dump(), "approval": approval}
    )


async def _refusal(err: DecisionRefused, store: ProjectionStore, request_id: str) -> HttpError:
    if err.error_type == ERROR_UNKNOWN_APPROVAL:
        return NotFound(str(err), error_type=err.error_type)
    if err.error_type in (ERROR_NOT_AN_APPROVER, ERROR_EDIT_DENIED):
        return Forbidden(str(err), error_type=err.error_type)
    if err.error_type == ERROR_INVALID_EDIT:
        return Unprocessable(str(err), error_type=err.error_type)
    if err.error_type == ERROR_EDIT_UNCHECKED:
        return ServiceUnavailable(str(err), error_type=err.error_type)
    return Conflict(str(err), error_type=err.error_type, extra={"approval": await store.approval(request_id)})
