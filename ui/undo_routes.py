"""The undo route: ask to restore what an approved write_file replaced (workflows/undo.py).

The answer is the undo's own request (decided like any other) or a refusal: 404 unknown, 409
when the file changed since the write (with `three_way`: before, as written, now), 503 with no
worker to read the file."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from pydantic import Field
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from core.contract import ERROR_UNKNOWN_APPROVAL
from core.refusals import DecisionRefused
from core.undo import UndoInput
from doors.undo_control import UndoRefused, ask_undo
from ui.bodies import StrictBody, json_body, read_json_body
from ui.errors import Conflict, NotFound, ServiceUnavailable
from ui.route_support import api_router, client_of, identity, require_id, store_of

router = api_router()


class UndoBody(StrictBody):
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who asks; default web")


@router.post("/approvals/{request_id:path}/undo", openapi_extra=json_body(UndoBody))
async def undo(request: Request, request_id: str) -> dict[str, Any]:
    require_id(request_id, "approval request")
    body = await read_json_body(request, UndoBody)
    who = await identity(request, body.name)
    asking = UndoInput(request_id=request_id, by=who.get("decided_by") or who.get("principal"), door="ui")
    try:
        undo_id = await ask_undo(await client_of(request), asking, store_of(request))
    except UndoRefused as err:
        raise Conflict(str(err), error_type=err.error_type, extra={"three_way": err.three_way}) from None
    except DecisionRefused as err:
        kind = NotFound if err.error_type == ERROR_UNKNOWN_APPROVAL else Conflict
        raise kind(str(err), error_type=err.error_type) from None
    except (RPCError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
        raise ServiceUnavailable(f"no worker took the undo: {err}") from None
    return {"request_id": request_id, "undo_request_id": undo_id}
