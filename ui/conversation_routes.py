"""The conversation routes of the API: list, start, read one, send a message, and its two switches
(close, auto-approve). Listings come from the projection; actions go through Temporal."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from core.compaction import SUMMARY_NAME
from core.tool_registry import TOOLS_UNAVAILABLE_NAME
from doors import control
from storage.reader import BadCursor
from ui import queries
from ui.bodies import AutoApproveBody, MessageBody, StartBody, json_body, read_json_body
from ui.errors import Conflict, NotFound, ServiceUnavailable, Unprocessable
from ui.route_support import (
    api_router,
    client_of,
    page_size,
    paged,
    require_id,
    settings_of,
    store_of,
    switcher,
)
from ui.security import principal_of
from ui.temporal import WorkerUnavailable, query_state, rpc_error_to_http, status_from_search_attributes

router = api_router()


@router.get("/conversations")
async def list_conversations(
    request: Request, response: Response, limit: int | None = None, after: str | None = None, status: str | None = None
) -> list[dict[str, Any]]:
    """Newest first, a page at a time (`?limit=&after=`), optionally one turn status (`?status=`)."""
    try:
        page = await queries.conversations(store_of(request), settings_of(request), page_size(limit), after, status)
    except BadCursor as err:
        raise Unprocessable(str(err)) from None
    return paged(request, response, page)


@router.post("/conversations", status_code=201, openapi_extra=json_body(StartBody))
async def start_conversation(request: Request) -> dict[str, Any]:
    body = await read_json_body(request, StartBody)
    settings = settings_of(request)
    client = await client_of(request)
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
    require_id(conversation_id, "conversation")
    settings = settings_of(request)
    row, approvals = await store_of(request).conversation_view(conversation_id)
    view: dict[str, Any] = {
        "conversation_id": conversation_id,
        "approvals": [queries.with_grant_offer(approval) for approval in approvals],
        "temporal_url": queries.temporal_url(settings, conversation_id),
        "updated_at": row["updated_at"] if row else None,
        **queries.host_wait_fields(row),
    }
    try:
        client = await client_of(request)
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
    archived = await store_of(request).archived_messages(conversation_id)
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
    require_id(conversation_id, "conversation")
    body = await read_json_body(request, MessageBody)
    try:
        await control.send_message(await client_of(request), conversation_id, body.text)
    except RPCError as err:
        raise rpc_error_to_http(err, conversation_id) from None
    return {"conversation_id": conversation_id, "status": "sent"}


@router.post("/conversations/{conversation_id:path}/close", status_code=202)
async def close_conversation(request: Request, conversation_id: str) -> dict[str, Any]:
    """Ends the conversation by signal; its waiting approvals resolve as canceled."""
    require_id(conversation_id, "conversation")
    try:
        by = await switcher(request)
        await control.close_conversation(await client_of(request), conversation_id, by, "ui")
    except RPCError as err:
        raise rpc_error_to_http(err, conversation_id) from None
    return {"conversation_id": conversation_id, "status": "closing"}


@router.post(
    "/conversations/{conversation_id:path}/auto-approve", status_code=202, openapi_extra=json_body(AutoApproveBody)
)
async def set_auto_approve(request: Request, conversation_id: str) -> dict[str, Any]:
    """Switches auto-approve by signal: every ask is allowed while on; deny rules still apply."""
    require_id(conversation_id, "conversation")
    body = await read_json_body(request, AutoApproveBody)
    try:
        by, client = await switcher(request), await client_of(request)
        await control.set_auto_approve(client, conversation_id, body.enabled, by, "ui")
    except RPCError as err:
        raise rpc_error_to_http(err, conversation_id) from None
    return {"conversation_id": conversation_id, "auto_approve": body.enabled}
