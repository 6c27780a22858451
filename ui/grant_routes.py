"""The grant routes of the API: list, make and revoke a person's "allow calls like this", and the
grant the decision endpoint makes with an approval (`grant` in its body).

Behind the same token, same-origin check and person as a decision: a person's own token (or a
trusted proxy) names the maker, a typed name is a maker with no verified principal, and the
approver rules decide which patterns a maker may grant (403 otherwise)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import Query, Request
from fastapi.responses import JSONResponse
from temporalio.service import RPCError

from config.settings import ConfigError
from core.contract import (
    ERROR_BAD_GRANT,
    ERROR_GRANT_REFUSED,
    ERROR_SUPPLY_REFUSED,
    ERROR_UNKNOWN_CONVERSATION,
    ERROR_UNKNOWN_GRANT,
)
from core.grants import Grant
from doors.grant_checks import BadGrant, GrantRefused, row_matched, valid_pattern
from doors.grants import MadeGrant, UnknownGrant, make_grant, new_grant, revoke
from doors.supplied_values import grant_refusal
from ui.bodies import GrantBody, GrantOffer, json_body, read_json_body
from ui.errors import BadRequest, Conflict, Forbidden, HttpError, NotFound, ServiceUnavailable
from ui.route_support import api_router, client_of, identity, require_id, settings_of, store_of

router = api_router()


def grant_document(grant: Grant, now: datetime | None = None) -> dict[str, Any]:
    """The grant as JSON, with its status now: active, expired or revoked."""
    moment = now or datetime.now(UTC)
    status = "revoked" if grant.revoked_at else ("active" if grant.active(moment) else "expired")
    return {**grant.model_dump(mode="json"), "status": status}


@router.get("/grants")
async def list_grants(request: Request, ended: str | None = Query(default=None, alias="all")) -> list[dict[str, Any]]:
    """The active grants, oldest first; `?all=1` adds the revoked and expired ones."""
    now = datetime.now(UTC)
    found = await store_of(request).grants(include_ended=ended not in (None, "", "0", "false"), now=now)
    return [grant_document(grant, now) for grant in found]


@router.post("/grants", status_code=201, openapi_extra=json_body(GrantBody))
async def add_grant(request: Request) -> JSONResponse:
    """`{pattern, scope, conversation_id?, for_seconds?}` → 201 `{grant, approved}`: `approved` are the
    waiting requests it approved at once. 400 a bad pattern, 403 a maker the approver rules refuse,
    404 an unknown conversation."""
    body = await read_json_body(request, GrantBody)
    who = await identity(request, body.name)
    grant = await checked_grant(request, body, who, body.conversation_id)
    made = await grant_now(request, grant, who)
    return JSONResponse({"grant": grant_document(made.grant), "approved": made.approved}, status_code=201)


@router.delete("/grants/{grant_id:path}")
async def revoke_grant(request: Request, grant_id: str) -> dict[str, Any]:
    """Ends the grant now (200 with it; one revoked already is returned as it was); 404 unknown."""
    require_id(grant_id, "grant")
    who = await identity(request, None)
    try:
        grant = await revoke(lambda: client_of(request), store_of(request), grant_id, who["decided_by"])
    except UnknownGrant as err:
        raise NotFound(str(err), error_type=ERROR_UNKNOWN_GRANT) from None
    except RPCError as err:
        raise ServiceUnavailable(f"revoked {grant_id}, but its conversation was not told: {err.message}") from None
    return grant_document(grant)


async def checked_grant(
    request: Request,
    offer: GrantOffer,
    who: dict[str, Any],
    conversation_id: str | None,
    from_request: str | None = None,
) -> Grant:
    """The grant checked, not stored, with the errors the API answers with."""
    try:
        return await new_grant(
            settings_of(request),
            store_of(request),
            pattern=offer.pattern,
            scope=offer.scope,
            made_by=who["decided_by"],
            groups=who.get("groups", []),
            door="ui",
            conversation_id=conversation_id,
            for_seconds=None if offer.for_seconds is None else float(offer.for_seconds),
            from_request=from_request,
        )
    except (BadGrant, ConfigError) as err:
        raise BadRequest(str(err), error_type=ERROR_BAD_GRANT) from None
    except GrantRefused as err:
        raise Forbidden(str(err), error_type=ERROR_GRANT_REFUSED) from None
    except UnknownGrant as err:
        raise NotFound(str(err), error_type=ERROR_UNKNOWN_CONVERSATION) from None


async def grant_with_approval(
    request: Request, offer: GrantOffer, who: dict[str, Any], row: dict[str, Any], decision: str
) -> Grant:
    """The grant a decision carries, checked before the decision is sent: only with allow, and about
    the call being approved (it, or one command of it, matches the pattern)."""
    if decision != "allow":
        raise BadRequest("a grant goes with the decision allow only", error_type=ERROR_BAD_GRANT)
    not_repeatable = grant_refusal(row)
    if not_repeatable is not None:
        raise Conflict(not_repeatable, error_type=ERROR_SUPPLY_REFUSED)
    try:
        pattern = valid_pattern(offer.pattern)
    except BadGrant as err:
        raise BadRequest(str(err), error_type=ERROR_BAD_GRANT) from None
    if not row_matched(pattern, row):
        raise BadRequest(f"{pattern} does not cover the call being approved", error_type=ERROR_BAD_GRANT)
    return await checked_grant(request, offer, who, row["conversation_id"], row["request_id"])


async def grant_now(request: Request, grant: Grant, who: dict[str, Any]) -> MadeGrant:
    """Store it and approve what waits that it covers."""
    settings, store = settings_of(request), store_of(request)
    try:
        return await make_grant(lambda: client_of(request), settings, store, grant, who.get("groups", []))
    except HttpError as err:
        raise ServiceUnavailable(f"granted {grant.grant_id}, but the calls waiting were not approved: {err}") from None
