"""One streamed Chat Completions call: pieces go to a publisher as they come, the reply is assembled.

Text deltas are joined; a tool call arrives as its index, id and name first, then its arguments in
pieces, and several calls interleave by index. A stream that ends without a finish reason was cut
off (the server died, the connection dropped): that is an error the retry policy retries, never a
half reply handed to the workflow; so is one that breaks off mid-body or goes quiet for the client's
timeout, each named as what it is (the server was reached, then stopped), not as "could not reach".
A 200 answer that holds no stream at all (one whole JSON reply, an empty body, no `data:` line:
servers that cannot stream tool calls answer so) is `NotAStream`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from temporalio.exceptions import ApplicationError

from activities.llm_errors import cause_text
from activities.stream_publisher import DeltaPublisher
from core.chat_model import LlmReply, TokenUsage, ToolCall
from core.contract import ERROR_LLM_STREAM_CUT, ERROR_LLM_TIMEOUT

EVENT_STREAM = "text/event-stream"


class NotAStream(Exception):
    """A stream request answered without a stream: why, and the body when there was one to keep."""

    def __init__(self, why: str, body: bytes = b"") -> None:
        super().__init__(why)
        self.why = why
        self.body = body


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class StreamedReply:
    content: str = ""
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: TokenUsage | None = None
    saw_content: bool = False

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk in; returns its new text (for the publisher)."""
        if chunk.usage is not None and chunk.usage.prompt_tokens > 0:
            self.usage = TokenUsage(
                prompt_tokens=chunk.usage.prompt_tokens, completion_tokens=chunk.usage.completion_tokens
            )
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        if choice.finish_reason is not None:
            self.finish_reason = choice.finish_reason
        delta = choice.delta
        for piece in delta.tool_calls or []:
            call = self.calls.setdefault(piece.index, _Call())
            call.id = piece.id or call.id
            if piece.function is not None:
                call.name = piece.function.name or call.name
                call.arguments += piece.function.arguments or ""
        if delta.content is not None:
            self.saw_content = True
            self.content += delta.content
            return delta.content
        return ""

    def reply(self) -> LlmReply:
        calls = [ToolCall(id=c.id, name=c.name, arguments=c.arguments) for _, c in sorted(self.calls.items())]
        # A message with tool calls and no text says None, as the non-streaming API does.
        content = self.content if self.content or (self.saw_content and not calls) else None
        return LlmReply(role="assistant", content=content, tool_calls=calls, usage=self.usage)


async def streamed_reply(
    client: openai.AsyncOpenAI, body: dict[str, Any], publisher: DeltaPublisher | None
) -> LlmReply:
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    stream = await client.post(
        "/chat/completions", body=body, cast_to=ChatCompletion, stream=True, stream_cls=AsyncStream[ChatCompletionChunk]
    )
    kind = stream.response.headers.get("content-type", "")
    if EVENT_STREAM not in kind:
        async with stream:
            answered = await stream.response.aread()
        raise NotAStream(f"it answered a stream request with {kind or 'no content type'}", answered)
    reply = StreamedReply()
    if publisher is not None:
        await publisher.start()
    chunks = 0
    try:
        async with stream:
            async for chunk in stream:
                chunks += 1
                text = reply.add(chunk)
                if publisher is not None:
                    await publisher.add(text)
    except openai.APITimeoutError:
        # The client's timeout holds for each read: the server went quiet in the middle of its reply.
        raise ApplicationError(
            f"the model's stream stalled: nothing came for {_seconds(client.timeout)} after {chunks} chunks",
            type=ERROR_LLM_TIMEOUT,
        ) from None
    except openai.APIConnectionError as err:
        # The server was reached and had begun: "could not reach" would send an operator the wrong way.
        raise ApplicationError(
            f"the model's stream broke off after {chunks} chunks: {cause_text(err)}", type=ERROR_LLM_STREAM_CUT
        ) from None
    if not chunks:
        raise NotAStream("it answered a stream request with no `data:` line")
    if reply.finish_reason is None:
        raise ApplicationError("the model's stream ended before the reply was finished", type=ERROR_LLM_STREAM_CUT)
    if publisher is not None:
        await publisher.finish()
    return reply.reply()


def _seconds(timeout: object) -> str:
    """The client's read timeout as people set it (LLM_TIMEOUT_SECONDS)."""
    read = getattr(timeout, "read", timeout)
    return f"{read:g} s" if isinstance(read, int | float) else "its timeout"
