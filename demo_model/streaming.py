"""A scripted reply as Server-Sent Events in the Chat Completions chunk format (`stream: true`).

The text and each tool call's arguments go out in small pieces, as a real model sends them: the
first chunk of a tool call carries its index, id and name, the later ones only more arguments.
The last chunk before `[DONE]` carries the usage when the request asked for it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

PIECE_CHARS = 4  # about one token
# A long text (a reply quoting big tool results) goes out in at most this many pieces, bigger
# ones: parsing one chunk costs the client far more than its characters, and 80,000 chunks of a
# 320 KB quote would cost it seconds of CPU where a reply of that size streams in one.
MAX_PIECES = 1_000


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    size = max(size, -(-len(text) // MAX_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chunk(ident: str, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def chunks(message: dict[str, Any], model: str, usage: dict[str, int] | None) -> Iterator[dict[str, Any]]:
    """The chunks of one assistant message, in order."""
    ident = f"chatcmpl-{uuid.uuid4().hex[:12]}"
    yield _chunk(ident, model, {"role": "assistant", "content": ""})
    for piece in pieces(message.get("content") or ""):
        yield _chunk(ident, model, {"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {"index": index, "id": call["id"], "type": "function"}
        yield _chunk(ident, model, {"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})
        for piece in pieces(call["function"]["arguments"] or "", 8):
            yield _chunk(ident, model, {"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield _chunk(ident, model, {}, "tool_calls" if message.get("tool_calls") else "stop")
    if usage is not None:
        yield {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": usage,
        }


def sse(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()
