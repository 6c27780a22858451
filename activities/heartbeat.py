"""Heartbeat while an awaitable runs, so a worker killed mid-activity is noticed within the
heartbeat timeout (seconds) rather than when start_to_close runs out (minutes)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
HEARTBEAT_EVERY_SECONDS = 1.0


async def heartbeating(call: Awaitable[T], beat: Callable[[], None], every: float = HEARTBEAT_EVERY_SECONDS) -> T:
    task = asyncio.ensure_future(call)
    try:
        while not task.done():
            beat()
            await asyncio.wait({task}, timeout=every)
        return task.result()
    finally:
        task.cancel()
