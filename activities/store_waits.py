"""The writes around a tool wait for their store instead of failing the tool's attempt.

A tool's activity has a few attempts (TOOL_RETRY), and a full disk, a payload store answering 503
or a database restarting or cut off refuses every write for as long as it lasts: failed attempts
would end an approved call as "the tool failed" within seconds (its ledger claim refused), or
report a tool that ran as "outcome unknown" (its finished state refused) or as failed (its result
not stored). So a write refused that way (StoreFull, StoreUnavailable, PayloadStoreUnavailable)
is tried again within the attempt, heartbeating, until the store takes it or the attempt ends
(its timeout, a cancellation). The tool waits for its ledger claim: it never runs while the ledger
cannot record it, and the worker's log says so. Only writes safe to repeat come here: a lost
connection leaves a statement's fate unknown (the ledger's own writes recognise their earlier try).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio import activity

from payload_store.local import PayloadStoreUnavailable
from storage.backend import StoreFull, StoreUnavailable

T = TypeVar("T")
RETRY_EVERY = 0.5  # seconds between tries: a store that takes writes again is used within this
BEAT_EVERY = 2.0  # a tool's heartbeat timeout is 10 s: a write that a slow store holds beats meanwhile
REFUSED = (StoreFull, StoreUnavailable, PayloadStoreUnavailable)
log = logging.getLogger(__name__)


async def when_stored(write: Callable[[], Awaitable[T]], what: str) -> T:
    """`write()`'s result, tried again while its store refuses it; `what` says in the log what waits."""
    since: float | None = None
    while True:
        try:
            done = await _beating(write())
        except REFUSED as err:
            if since is None:
                since = time.monotonic()
                _logger().warning("%s: %s; tried again every %gs", what, err, RETRY_EVERY)
            _beat()
            await asyncio.sleep(RETRY_EVERY)
            continue
        if since is not None:
            _logger().info("%s: stored after %.1fs of waiting", what, time.monotonic() - since)
        return done


def _beating_here() -> bool:
    """Heartbeats go from a (non-local) activity; the ledger is also used outside one (tests, tools)."""
    return activity.in_activity() and not activity.info().is_local


def _beat() -> None:
    if _beating_here():
        activity.heartbeat()


def _logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    return activity.logger if activity.in_activity() else log


async def _beating(write: Awaitable[T]) -> T:
    """Await the write, heartbeating while a slow store holds it, so Temporal starts no other attempt.
    The write runs in this task, at once: a ledger claim still starts before the tool's launch is
    prepared (see ToolActivities._once_beside)."""
    if not _beating_here():
        return await write
    beats = asyncio.ensure_future(_beat_every(BEAT_EVERY))
    try:
        return await write
    finally:
        beats.cancel()


async def _beat_every(seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds)
        activity.heartbeat()


async def result_stored(result: Any, what: str) -> None:
    """Put a tool's result in the payload store now, waiting for the store, before the activity
    returns it. Temporal's SDK stores it again when the activity completes, and a failure there
    would fail the attempt after the tool ran; the blobs are named by their digests and this
    process knows them stored, so that second store writes nothing and cannot fail."""
    try:
        converter = activity.client().data_converter
    except RuntimeError:  # an activity run without a worker's client (a test's environment)
        return
    if converter.external_storage is not None:
        await when_stored(lambda: converter.encode([result]), what)
