"""POST /ag-ui: the AG-UI protocol's HTTP endpoint over our conversations (docs/ag-ui.md).

Behind the same token and origin checks as the API. The answer is always a Server-Sent Events
stream that opens with RUN_STARTED: input the run cannot take (not a RunAgentInput, an unknown
or already decided interrupt, a missing resume entry) ends it with RUN_ERROR naming what was
wrong and a code, never with an HTTP error, so an AG-UI client shows it where it shows the run.
A run whose credential ends (a logout, at once in this process; an expired session or a revoked
token within a few seconds: ui/open_streams.py) ends with RUN_ERROR `SessionEnded`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import RunAgentInput, RunErrorEvent, RunStartedEvent
from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from ui.agui_run import Run, RunRefused, stream_run
from ui.agui_translate import encode
from ui.errors import HttpError
from ui.open_streams import while_signed_in
from ui.route_support import client_of
from ui.security import require_same_origin, require_token

PROTOCOL_VERSION = "1.0"
SESSION_ENDED = encode(
    RunErrorEvent(message="signed out: the session ended or the token was revoked; log in again", code="SessionEnded")
)
log = logging.getLogger(__name__)

router = APIRouter(dependencies=[Depends(require_token), Depends(require_same_origin)])


def _ids_of(raw: Any) -> tuple[str, str]:
    """threadId and runId from input that is not a valid RunAgentInput, so its RUN_ERROR can say whose."""
    if not isinstance(raw, dict):
        return "unknown", "unknown"
    thread, run = raw.get("threadId"), raw.get("runId")
    return (thread if isinstance(thread, str) else "unknown"), (run if isinstance(run, str) else "unknown")


def _invalid(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"not a RunAgentInput: {where}: {first['msg']} ({error.error_count()} problem(s))"


async def _events(request: Request, body: bytes) -> AsyncIterator[str]:
    try:
        raw = json.loads(body)
    except ValueError:
        raw = None
    try:
        run_input = RunAgentInput.model_validate(raw)
    except ValidationError as err:
        thread_id, run_id = _ids_of(raw)
        yield encode(RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION))
        yield encode(RunErrorEvent(message=_invalid(err), code="InvalidInput"))
        return
    started = RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id, protocol_version=PROTOCOL_VERSION)
    yield encode(started)
    try:
        client = await client_of(request)
        async for chunk in while_signed_in(
            request, lambda credential: stream_run(Run(request, client, run_input, credential)), SESSION_ENDED
        ):
            yield chunk
    except RunRefused as err:
        yield encode(RunErrorEvent(message=str(err), code=err.code))
    except HttpError as err:  # Temporal could not be reached
        yield encode(RunErrorEvent(message=err.message, code=err.error_type))
    except Exception as err:  # the headers are sent: the stream itself must say the run ended
        log.exception("AG-UI run %s of thread %s failed", run_input.run_id, run_input.thread_id)
        yield encode(RunErrorEvent(message=f"the run failed: {type(err).__name__}", code="InternalError"))


# Not in the API's OpenAPI schema: its body and its stream are the AG-UI protocol's, described there.
@router.post("/ag-ui", include_in_schema=False)
async def agui_run(request: Request) -> StreamingResponse:
    body = await request.body()
    return StreamingResponse(
        _events(request, body), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"}
    )
