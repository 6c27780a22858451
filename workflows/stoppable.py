"""A model call that a close stops: the activity is cancelled rather than awaited to its end.

A slow model can take minutes; a person who closes the conversation means stop now. The call runs
as a task beside the close flag, and the first of the two to come wins. Histories from before this
rule awaited the call to its end and replay down that path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows import patches

T = TypeVar("T")


async def unless_closed(call: Awaitable[T], is_closed: Callable[[], bool]) -> T | None:
    """The call's result, or None when the conversation was closed first (the call is cancelled)."""
    if not workflow.patched(patches.CLOSE_STOPS_MODEL_CALL):
        return await call
    task = asyncio.ensure_future(call)
    await workflow.wait_condition(lambda: task.done() or is_closed())
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(ActivityError, asyncio.CancelledError):
        await task  # the cancelled call's end: nothing of it is kept
    return None
