"""`POST /api/approvals/{request_id}/extend`: more time for a waiting request, by someone who may decide it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import Field
from temporalio.service import RPCError

from core.models import ERROR_NOT_AN_APPROVER, ERROR_UNKNOWN_APPROVAL, MAX_EXTENSION_SECONDS, ExtensionInput
from doors import control
from storage.claims import DecisionRefused
from ui.bodies import StrictBody, json_body, read_json_body
from ui.errors import Conflict, Forbidden, NotFound, ServiceUnavailable
from ui.security import require_same_origin, require_token
from ui.team import identity

router = APIRouter(prefix="/api", dependencies=[Depends(require_token), Depends(require_same_origin)])


class ExtendBody(StrictBody):
    seconds: int | float = Field(gt=0, le=MAX_EXTENSION_SECONDS)
    reason: str | None = Field(default=None, max_length=2000)
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who extends; default web")


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
        client = await request.app.state.client_provider()
        result = await control.extend_approval(client, extension, request.app.state.store)
    except DecisionRefused as err:
        kind = {ERROR_UNKNOWN_APPROVAL: NotFound, ERROR_NOT_AN_APPROVER: Forbidden}.get(err.error_type, Conflict)
        raise kind(str(err), error_type=err.error_type) from None
    except RPCError as err:
        raise ServiceUnavailable(f"no worker took the extension: {err.message}") from None
    return {"request_id": request_id, "expires_at": result.expires_at.isoformat()}
