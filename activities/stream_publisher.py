"""The model's text, as it streams, into the read model's event log: `message.delta` events.

One event per flush, not per token: the first piece goes out at once (time to first token), later
pieces gather for `every` seconds. Each event names the conversation, the turn, the model call
(activity id), the attempt and a sequence number, and holds the text's offset, so a reader can
put pieces in order and tell a retried call (a new attempt) from the one it replaces. A write that
fails is logged and skipped: the stream is a view; the recorded message is the truth. Nor does the
reply wait for a slow write: one still out after WRITE_WAIT_SECONDS (a database restarting or out of
reach) goes on by itself, and the text gathers until it is done, so the model's reply flows at its
own pace; only the last piece, with its end, is awaited.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from core.projection_model import ProjectionEvent
from storage.stream_events import EVENT_MESSAGE_DELTA

FLUSH_EVERY_SECONDS = 0.1
WRITE_WAIT_SECONDS = 0.5
log = logging.getLogger(__name__)


class DeltaSink(Protocol):
    async def append_stream_event(self, event: ProjectionEvent) -> None: ...


class DeltaPublisher:
    def __init__(
        self,
        sink: DeltaSink,
        *,
        conversation_id: str,
        turn_id: str,
        call_key: str,
        call_id: str,
        attempt: int,
        every: float = FLUSH_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink, self._every, self._clock = sink, every, clock
        self._conversation_id, self._turn_id = conversation_id, turn_id
        self._call_key, self._call_id, self._attempt = call_key, call_id, attempt
        self._buffer = ""
        self._offset = 0
        self._seq = 0
        self._last: float | None = None
        self._out: asyncio.Future[None] | None = None  # a write the reply stopped waiting for

    async def start(self) -> None:
        """A retried call says so before its first piece, so a reader drops the old attempt's text now."""
        if self._attempt > 1:
            await self._write("", {"restarted": True})

    async def add(self, text: str) -> None:
        if not text:
            return
        self._buffer += text
        if self._last is None or self._clock() - self._last >= self._every:
            await self.flush()

    async def finish(self) -> None:
        await self.flush(done=True)

    async def flush(self, done: bool = False) -> None:
        if not self._buffer and not done:
            return
        if self._out is not None and not self._out.done():
            if not done:
                return  # the text waits for the slow write before it
            await self._out  # pieces land in order, every one before the reply ends
        text, self._buffer = self._buffer, ""
        await self._write(text, {"done": True} if done else {})
        self._offset += len(text)
        self._last = self._clock()

    async def _write(self, text: str, extra: dict[str, Any]) -> None:
        self._seq += 1
        payload = {
            "turn_id": self._turn_id,
            "call_id": self._call_id,
            "attempt": self._attempt,
            "seq": self._seq,
            "offset": self._offset,
            "text": text,
            **extra,
        }
        event = ProjectionEvent(
            event_key=f"delta:{self._call_key}:{self._attempt}:{self._seq}",
            event_type=EVENT_MESSAGE_DELTA,
            conversation_id=self._conversation_id,
            payload=payload,
        )
        writing = asyncio.ensure_future(self._append(event))
        if extra.get("done"):
            await writing
        elif not (await asyncio.wait({writing}, timeout=WRITE_WAIT_SECONDS))[0]:
            self._out = writing

    async def _append(self, event: ProjectionEvent) -> None:
        try:
            await self._sink.append_stream_event(event)
        except Exception:  # the stream is a view: a failed write must not fail the model call
            log.warning("could not write a streamed piece of %s", self._conversation_id, exc_info=True)
