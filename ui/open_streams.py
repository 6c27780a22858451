"""The credential of an open stream (the inbox's event stream, an AG-UI run) and the open streams of
each login session in this UI process.

A logout ends its session's streams in the process that takes it at once: the logout route calls
`OpenStreams.end` before it answers, and a stream looks at that mark between producing each event
and writing it, so nothing written after the logout reaches a browser that is no longer signed in;
a stream waiting for new rows is woken by it. What another process cannot tell this one (a logout
it took, an expired session, a revoked or changed token) is found by asking again every
AUTH_RECHECK_INTERVAL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import aclosing, contextmanager

from fastapi import Request

from ui.security import authenticated, session_of

AUTH_RECHECK_INTERVAL = 2.0  # a credential ended elsewhere ends an open stream within this


class SignedOut(Exception):
    """The stream's credential no longer holds: its producer stops, and the stream says so."""


class StreamCredential:
    """One open stream's credential, asked whether it still holds."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self._ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._checked: float | None = None  # never yet: the first check asks the store

    @property
    def ended(self) -> bool:
        """Whether the stream must write nothing more: looked at before every event it writes."""
        return self._ended.done()

    def end(self) -> None:
        if not self._ended.done():
            self._ended.set_result(None)

    async def check(self) -> None:
        """Raises SignedOut once the credential is gone: at once after a logout in this process,
        else when the store says so (asked at most every AUTH_RECHECK_INTERVAL)."""
        now = time.monotonic()
        if not self.ended and (self._checked is None or now - self._checked > AUTH_RECHECK_INTERVAL):
            self._checked = now
            if not await authenticated(self.request):
                self.end()
        if self.ended:
            raise SignedOut()

    async def wait(self, waiting: Awaitable[None]) -> None:
        """`waiting` (the store's wait for new events), cut short when the credential ends."""
        waiter = asyncio.ensure_future(waiting)
        try:
            await asyncio.wait((waiter, self._ended), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if waiter.done() and not waiter.cancelled():
            waiter.result()  # the wait's own error, if it failed


class OpenStreams:
    """The open streams of each login session in this process, by session record (app.state.open_streams)."""

    def __init__(self) -> None:
        self._of: dict[str, set[StreamCredential]] = {}

    def end(self, session: str) -> None:
        """Ends every open stream of the session (called by the logout, on the server's loop)."""
        for credential in self._of.pop(session, set()):
            credential.end()

    @contextmanager
    def follow(self, session: str, credential: StreamCredential) -> Iterator[None]:
        self._of.setdefault(session, set()).add(credential)
        try:
            yield
        finally:
            streams = self._of.get(session)
            if streams is not None:
                streams.discard(credential)
                if not streams:
                    del self._of[session]


@contextmanager
def _credential_of(request: Request) -> Iterator[StreamCredential]:
    """The stream's credential, known to the open streams of its session when it is a login session."""
    credential = StreamCredential(request)
    session = session_of(request)
    if session is None:
        yield credential
        return
    streams: OpenStreams = request.app.state.open_streams
    with streams.follow(session, credential):
        yield credential


async def while_signed_in(
    request: Request, produce: Callable[[StreamCredential], AsyncGenerator[str, None]], farewell: str
) -> AsyncIterator[str]:
    """What `produce` writes while the request's credential holds; once it ends, `farewell` and
    nothing more. The credential is followed before the first check (which asks the store at once),
    so a logout that came between the request's own check and here is not missed."""
    with _credential_of(request) as credential:
        async with aclosing(produce(credential)) as chunks:
            try:
                async for chunk in chunks:
                    if credential.ended:
                        break
                    yield chunk
                else:
                    return
            except SignedOut:
                pass
        yield farewell
