"""A worker notes its host in the read model while it runs, so `hosts` and the inbox can say which
hosts are up and since when one was last seen (Temporal's pollers say when it last polled)."""

from __future__ import annotations

import asyncio
import logging

from storage.store import ProjectionStore

logger = logging.getLogger(__name__)
NOTE_EVERY_SECONDS = 15.0


async def keep_noting(
    projection: ProjectionStore, host: str, host_queue: str, every: float = NOTE_EVERY_SECONDS
) -> None:
    """Until cancelled: this host was seen now (a failed write is tried again at the next beat)."""
    while True:
        try:
            await projection.note_host(host, host_queue)
        except Exception as err:
            logger.warning("could not note host %s as up: %s", host, err)
        await asyncio.sleep(every)
