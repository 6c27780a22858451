"""Request bodies are bounded while they arrive, before anything holds them whole.

A declared Content-Length over the limit is refused at once; a chunked (or lying) body is counted
as the ASGI receive stream delivers it, and the read that crosses the limit raises PayloadTooLarge,
which the app's HttpError handler answers with 413. Either way the process holds at most the
limit plus one chunk, whatever a client sends, so no door (login included) can balloon its memory.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ui.errors import HttpError

MAX_BODY_BYTES = 256 * 1024


class PayloadTooLarge(HttpError):
    status = 413
    error_type = "PayloadTooLarge"


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the body is larger than {limit} bytes")


class BodyLimit:
    """Pure ASGI middleware: counts body bytes from the receive stream."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_bytes:
            await _refuse(send, too_large(self.max_bytes))
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise too_large(self.max_bytes)
            return message

        await self.app(scope, counted, send)


async def _refuse(send: Send, error: HttpError) -> None:
    """Answer before reading the body. The connection stays open: the server discards what the
    client still sends, so a client that writes its whole body before reading still gets the 413."""
    body = json.dumps(error.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
