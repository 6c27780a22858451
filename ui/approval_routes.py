"""The approval routes of the API: list and read requests, and every way to act on one: decide it
(allow, deny, always allow, edit), decide several at once, extend its deadline.

A decision is claimed in the projection first (the first one wins at once), then goes to the
workflow by the `decide` update (by signal when no worker answers in time,
doors/decision_delivery.py); an extension is checked and answered by the workflow."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from temporalio.service import RPCError, RPCStatusCode

from core.contract import (
    ERROR_CONVERSATION_CLOSED,
    ERROR_EDIT_DENIED,
    ERROR_EDIT_UNCHECKED,
    ERROR_INVALID_EDIT,
    ERROR_NOT_AN_APPROVER,
    ERROR_SUPPLY_REFUSED,
    ERROR_UNKNOWN_APPROVAL,
)
from core.conversation_model import DecisionInput, ExtensionInput
from core.refusals import DecisionRefused
from doors import control
from doors.grants import record_always
from doors.supplied_values import sealed_values
from storage.fatigue_notices import notice_text
from storage.reader import BadCursor
from storage.store import ProjectionStore
from storage.writes import now_iso
from ui import queries
from ui.bodies import BatchDecisionBody, DecisionBody, ExtendBody, json_body, read_json_body
from ui.errors import Conflict, Forbidden, HttpError, NotFound, ServiceUnavailable, Unprocessable
from ui.grant_routes import grant_document, grant_now, grant_with_approval
from ui.route_support import (
    api_router,
    client_of,
    identity,
    page_size,
    paged,
    require_id,
    settings_of,
    store_of,
)

router = api_router()


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
        page = await queries.approvals(store_of(request), status, conversation_id, page_size(limit), after)
    except BadCursor as err:
        raise Unprocessable(str(err)) from None
    page.items = [queries.with_grant_offer(queries.with_requester_link(settings_of(request), i)) for i in page.items]
    return paged(request, response, page)


@router.get("/approvals/{request_id:path}")
async def get_approval(request: Request, request_id: str) -> dict[str, Any]:
    require_id(request_id, "approval request")
    found = await store_of(request).approval(request_id)
    if found is None:
        raise NotFound(f"no approval request {request_id}", error_type=ERROR_UNKNOWN_APPROVAL)
    return queries.with_grant_offer(queries.with_requester_link(settings_of(request), found))


@router.post("/approvals/{request_id:path}/decision", openapi_extra=json_body(DecisionBody))
async def decide(request: Request, request_id: str) -> JSONResponse:
    """First decision wins at once (a claim in the projection), then goes to the workflow by update
    (by signal when no worker answers in time)."""
    require_id(request_id, "approval request")
    body = await read_json_body(request, DecisionBody)
    settings, store = settings_of(request), store_of(request)
    row = await store.approval(request_id)
    if row is None:
        raise NotFound(f"no approval request {request_id}", error_type=ERROR_UNKNOWN_APPROVAL)
    who = await identity(request, body.name)
    # A grant that goes with the approval is checked first: a refused one leaves the call undecided.
    granting = None if body.grant is None else await grant_with_approval(request, body.grant, who, row, body.decision)
    client = await client_of(request)
    asked_at = now_iso()
    try:
        decision = DecisionInput(
            request_id=request_id,
            decision=body.decision,
            reason=body.reason or None,
            args_hash=body.args_hash,
            arguments=body.arguments,
            door="ui",
            supplied=sealed_values(settings, request_id, body.supplied or {}),  # sealed here, first
            **who,
        )
        await control.send_decision(client, settings, decision, store)
    except DecisionRefused as err:
        raise await _refusal(err, store, request_id) from None
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise Conflict(
                "the conversation is no longer running, so nothing can be decided", error_type=ERROR_CONVERSATION_CLOSED
            ) from None
        raise ServiceUnavailable(f"Temporal refused the decision: {err.message}") from None
    shown = decision.model_dump(exclude={"supplied"}) | {"supplied": sorted(decision.supplied)}  # names only
    sent: dict[str, Any] = {"request_id": request_id, "status": "sent", "decision": shown}
    if granting is not None:
        made = await grant_now(request, granting, who)
        sent |= {"grant": grant_document(made.grant), "approved": made.approved}
    elif decision.decision == "always_allow" and decision.decided_by:
        sent["grant"] = grant_document(await record_always(store, row, decision.decided_by))
    sent["approval"] = await store.approval(request_id)
    notices = await store.fatigue_notices(asked_at, decision.decided_by) if decision.decided_by else []
    if notices:
        sent["notice"] = notice_text(notices[-1])
    return JSONResponse(sent)


async def _refusal(err: DecisionRefused, store: ProjectionStore, request_id: str) -> HttpError:
    if err.error_type == ERROR_UNKNOWN_APPROVAL:
        return NotFound(str(err), error_type=err.error_type)
    if err.error_type in (ERROR_NOT_AN_APPROVER, ERROR_EDIT_DENIED):
        return Forbidden(str(err), error_type=err.error_type)
    if err.error_type in (ERROR_INVALID_EDIT, ERROR_SUPPLY_REFUSED):
        return Unprocessable(str(err), error_type=err.error_type)
    if err.error_type == ERROR_EDIT_UNCHECKED:
        return ServiceUnavailable(str(err), error_type=err.error_type)
    return Conflict(str(err), error_type=err.error_type, extra={"approval": await store.approval(request_id)})


@router.post("/approvals/decisions", openapi_extra=json_body(BatchDecisionBody))
async def decide_batch(request: Request) -> dict[str, Any]:
    """Several calls in one action: each gets its own claim and delivery, and its own result; a refused
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
    store = store_of(request)
    results = await control.send_batch(await client_of(request), settings_of(request), decisions, store)
    if body.decision == "always_allow" and who["decided_by"]:
        # Each always-allow sent is kept as a grant too, so it can be listed and revoked.
        for sent in (r for r in results if r.error_type is None):
            row = await store.approval(sent.request_id)
            if row is not None:
                await record_always(store, row, who["decided_by"])
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


# More time for a waiting request, by someone who may decide it.
@router.post("/approvals/{request_id:path}/extend", openapi_extra=json_body(ExtendBody))
async def extend(request: Request, request_id: str) -> dict[str, Any]:
    """The workflow checks the approver rules and answers with the new expiry: 403 not an approver,
    404 unknown, 409 already resolved, 503 no worker answered."""
    body = await read_json_body(request, ExtendBody)
    who = await identity(request, body.name)
    extension = ExtensionInput(
        request_id=request_id, seconds=float(body.seconds), reason=body.reason or None, door="ui", **who
    )
    try:
        client = await client_of(request)
        result = await control.extend_approval(client, extension, store_of(request))
    except DecisionRefused as err:
        kind = {ERROR_UNKNOWN_APPROVAL: NotFound, ERROR_NOT_AN_APPROVER: Forbidden}.get(err.error_type, Conflict)
        raise kind(str(err), error_type=err.error_type) from None
    except RPCError as err:
        raise ServiceUnavailable(f"no worker took the extension: {err.message}") from None
    return {"request_id": request_id, "expires_at": result.expires_at.isoformat()}
