"""An approved tool that runs long tells its workflow so, once, after the seconds its request names.

The workflow holds the turn's status in Temporal's list back while a decided call's tool starts
(workflows/approved_calls.py): the deciding workflow task then holds no search attribute update and no
timer, and the tool's result publishes the status. A tool still running past the catch-up signals
`tool_still_running`, and the status is published then; a quick tool sends nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from temporalio import activity

from core.contract import SIGNAL_TOOL_STILL_RUNNING
from core.tool_run_model import ToolRequest, ToolStillRunning


@contextlib.asynccontextmanager
async def telling_when_long(request: ToolRequest) -> AsyncIterator[None]:
    """While the tool runs: the signal, if it outlives request.status_catch_up_seconds."""
    if request.status_catch_up_seconds is None:
        yield
        return
    telling = asyncio.ensure_future(_tell_after(request, request.status_catch_up_seconds))
    try:
        yield
    finally:
        telling.cancel()


async def _tell_after(request: ToolRequest, seconds: float) -> None:
    await asyncio.sleep(seconds)
    info = activity.info()
    if info.workflow_id is None:  # not run by a workflow: no one to tell
        return
    try:
        handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
        await handle.signal(SIGNAL_TOOL_STILL_RUNNING, ToolStillRunning(request_id=request.request_id))
    except Exception as err:  # the status then follows with the tool's result, as it would anyway
        activity.logger.warning("could not tell %s that %s still runs: %s", info.workflow_id, request.request_id, err)
