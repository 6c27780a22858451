"""call_llm: one Chat Completions request through the openai client, retried by Temporal only.

With streaming on (LLM_STREAM, the default) the reply is read as it is written and its text goes
to the read model's event log while the call runs (activities/llm_stream.py); the activity's result,
the one message history records, is the same either way. What an endpoint cannot do is learned from
how it answers, not from its name, and remembered for the life of the process: a stream request
answered without a stream, a refused `max_tokens`. `ModelEndpoint` is that request on its own, which
`starter.py doctor` uses too; `LlmActivities` runs it as the activity. The openai package (a third
of a worker's start) and what wraps it are imported with the first model call.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.stream_publisher import DeltaPublisher, DeltaSink
from core.chat_model import ChatMessage, LlmReply, LlmRequest, TokenUsage, ToolCall
from core.contract import ERROR_LLM_EMPTY_RESPONSE
from workflows.activity_calls import CALL_LLM

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

    from config.settings import Settings

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_MAX_TOKENS = 4096
log = logging.getLogger(__name__)


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    # Tool calls with no text go with "": valid everywhere, where some servers answer null with a 500.
    wire: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in message.tool_calls
        ]
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    return wire


def wire_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The leading system messages (the prompt, a compaction's summary) go as one: many chat
    templates accept a single system message, and only at the start."""
    head = 0
    while head < len(messages) and messages[head].role == "system":
        head += 1
    wire = [_wire_message(m) for m in messages[head:]]
    if head:
        joined = "\n\n".join(m.content or "" for m in messages[:head])
        wire.insert(0, {"role": "system", "content": joined})
    return wire


def completion_reply(completion: ChatCompletion) -> LlmReply:
    if not completion.choices:
        raise ApplicationError("the model returned no choices", type=ERROR_LLM_EMPTY_RESPONSE)
    message = completion.choices[0].message
    tool_calls = [
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
        for call in message.tool_calls or []
        if call.type == "function"
    ]
    usage = completion.usage
    return LlmReply(
        role="assistant",
        content=message.content,
        tool_calls=tool_calls,
        # A server that counts nothing says 0: that is no count at all.
        usage=TokenUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
        if usage is not None and usage.prompt_tokens > 0
        else None,
    )


def whole_reply(body: bytes) -> LlmReply | None:
    """The reply in a body that holds one whole completion; None for anything else."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not data.get("choices"):
        return None
    from openai.types.chat import ChatCompletion

    return completion_reply(ChatCompletion.construct(**data))


class ModelEndpoint:
    """One OpenAI-compatible endpoint: the request body, a stream when the endpoint can give one,
    a whole reply when not, and every failure named (activities/llm_errors.py)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        stream: bool = False,
    ) -> None:
        self.base_url, self.timeout, self._api_key = base_url, timeout, api_key
        # Made on the first call: its TLS context alone costs tens of milliseconds of CPU, and a
        # worker (or `doctor`) that never asks the model need not pay it.
        self._current: openai.AsyncOpenAI | None = None
        self._model, self._max_tokens = model, max_tokens
        self._limit_field = "max_tokens"
        self.streaming = stream

    @classmethod
    def of(cls, settings: Settings, stream: bool | None = None) -> ModelEndpoint:
        """The endpoint the settings name (OPENAI_BASE_URL, LLM_MODEL and their limits); `stream`
        overrides LLM_STREAM."""
        return cls(
            settings.openai_base_url,
            settings.openai_api_key,
            settings.llm_model,
            timeout=settings.llm_timeout_seconds,
            max_tokens=settings.llm_max_tokens,
            stream=settings.llm_stream if stream is None else stream,
        )

    @property
    def _client(self) -> openai.AsyncOpenAI:
        if self._current is None:
            self._current = self._new_client()
        return self._current

    def _new_client(self) -> openai.AsyncOpenAI:
        import openai

        # max_retries=0: Temporal's retry policy is the only one, so attempts show in history.
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self._api_key, max_retries=0, timeout=self.timeout)

    async def close(self) -> None:
        """Close the client's connections, if a call made one: left to the collector, once no loop
        runs, the client warned that its close was never awaited."""
        if self._current is not None:
            await self._current.close()
            self._current = None

    def body(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> dict[str, Any]:
        # The body is already in wire form: posting it as is skips the client's per-field transform
        # of the params, which costs about a millisecond per message and blocks the worker's event
        # loop for half a second per call once a conversation holds a few hundred messages.
        body: dict[str, Any] = {"model": self._model, "messages": wire_messages(messages)}
        if tools:
            body["tools"] = tools
            # Some servers take a missing tool_choice as "none" and never call a tool.
            body["tool_choice"] = "auto"
        if self._max_tokens:  # LLM_MAX_TOKENS=0 sends no limit
            body[self._limit_field] = self._max_tokens
        return body

    async def reply(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]], publisher: DeltaPublisher | None = None
    ) -> LlmReply:
        import openai

        from activities.llm_errors import model_failure

        try:
            try:
                return await self._ask(self.body(messages, tools), publisher)
            except openai.BadRequestError as err:
                if not self._learn_limit_field(err):
                    raise
                return await self._ask(self.body(messages, tools), publisher)
        except openai.APIError as err:
            raise model_failure(err, self.base_url, self.timeout) from None

    async def _ask(self, body: dict[str, Any], publisher: DeltaPublisher | None) -> LlmReply:
        import openai
        from openai.types.chat import ChatCompletion

        from activities.llm_errors import server_message
        from activities.llm_stream import NotAStream, streamed_reply

        if self.streaming:
            try:
                return await streamed_reply(self._client, body, publisher)
            except NotAStream as answer:
                self._stop_streaming(answer.why)
                # A server that cut its stream off may reset the connection it leaves in the pool:
                # the old client closed, and the next request makes a new one.
                await self.close()
                if (reply := whole_reply(answer.body)) is not None:
                    return reply
            except openai.BadRequestError as err:
                if "stream" not in str(err.message).lower():
                    raise
                self._stop_streaming(f"it refused to stream: {server_message(err)}")
        completion = await self._client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        return completion_reply(completion)

    def _stop_streaming(self, why: str) -> None:
        if self.streaming:
            log.warning(
                "the model endpoint %s does not stream (%s): asking for whole replies from now on", self.base_url, why
            )
        self.streaming = False

    def _learn_limit_field(self, err: openai.BadRequestError) -> bool:
        """OpenAI's reasoning models refuse `max_tokens` and name `max_completion_tokens` instead."""
        if self._limit_field == "max_completion_tokens" or "max_completion_tokens" not in str(err.message):
            return False
        log.warning("the model endpoint %s refused max_tokens: sending max_completion_tokens", self.base_url)
        self._limit_field = "max_completion_tokens"
        return True


def load_client_library() -> None:
    """The model's client library, loaded by the worker before it polls. Loaded by the first model
    call instead, its import (about 0.4 s, longer on busy cores) held the event loop of a worker that
    had just taken over waiting conversations, and every workflow task and heartbeat of the process
    waited behind it. The client itself is still made by the first call (ModelEndpoint._client)."""
    import activities.llm_errors
    import activities.llm_stream  # noqa: F401  # both import openai and its chat types


class LlmActivities:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        stream: bool = False,
        deltas: DeltaSink | None = None,
    ) -> None:
        self.endpoint = ModelEndpoint(base_url, api_key, model, timeout=timeout, max_tokens=max_tokens, stream=stream)
        self._deltas = deltas
        load_client_library()

    def _publisher(self, request: LlmRequest) -> DeltaPublisher | None:
        """Only a reply streams to people; a compaction's summary is no message of the conversation."""
        if self._deltas is None or request.purpose != "reply":
            return None
        info = activity.info()
        return DeltaPublisher(
            self._deltas,
            conversation_id=request.conversation_id,
            turn_id=request.turn_id,
            call_key=f"{info.workflow_run_id}:{info.activity_id}",
            call_id=info.activity_id,
            attempt=info.attempt,
        )

    @activity.defn(name=CALL_LLM)
    async def call_llm(self, request: LlmRequest) -> LlmReply:
        activity.logger.info(
            "call_llm %s for %s/%s (%d messages)",
            request.purpose,
            request.conversation_id,
            request.turn_id,
            len(request.messages),
        )
        reply = self.endpoint.reply(request.messages, request.tools, self._publisher(request))
        return await heartbeating(reply, activity.heartbeat)
