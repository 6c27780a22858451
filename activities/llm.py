"""call_llm: one Chat Completions request through the openai client, retried by Temporal only.

With streaming on (LLM_STREAM, the default) the reply is read as it is written and its text goes
to the read model's event log while the call runs (activities/llm_stream.py); the activity's result,
the one message history records, is the same either way.
"""

from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletion
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from activities.llm_errors import is_context_window_error
from activities.llm_stream import streamed_reply
from activities.stream_publisher import DeltaPublisher, DeltaSink
from workflows.activity_calls import CALL_LLM, ERROR_CONTEXT_WINDOW
from workflows.models import ChatMessage, LlmReply, LlmRequest, TokenUsage, ToolCall


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
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


class LlmActivities:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 120.0,
        *,
        stream: bool = False,
        deltas: DeltaSink | None = None,
    ) -> None:
        # max_retries=0: Temporal's retry policy is the only one, so attempts show in history.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
        self._model = model
        self._stream = stream
        self._deltas = deltas

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

    async def _streamed(self, body: dict[str, Any], request: LlmRequest) -> LlmReply | None:
        """The streamed reply, or None when the endpoint refuses to stream (then this worker stops asking)."""
        try:
            return await heartbeating(streamed_reply(self._client, body, self._publisher(request)), activity.heartbeat)
        except openai.BadRequestError as err:
            if "stream" not in str(err.message).lower():
                raise
            activity.logger.warning("the model endpoint refused to stream (%s): asking without streaming", err)
            self._stream = False
            return None

    @activity.defn(name=CALL_LLM)
    async def call_llm(self, request: LlmRequest) -> LlmReply:
        activity.logger.info(
            "call_llm %s for %s/%s (%d messages)",
            request.purpose,
            request.conversation_id,
            request.turn_id,
            len(request.messages),
        )
        try:
            # The body is already in wire form: posting it as is skips the client's per-field transform
            # of the params, which costs about a millisecond per message and blocks the worker's event
            # loop for half a second per call once a conversation holds a few hundred messages.
            body: dict[str, Any] = {"model": self._model, "messages": wire_messages(request.messages)}
            if request.tools:
                body["tools"] = request.tools
            if self._stream and (streamed := await self._streamed(body, request)) is not None:
                return streamed
            completion = await heartbeating(
                self._client.post("/chat/completions", body=body, cast_to=ChatCompletion), activity.heartbeat
            )
        except openai.APIStatusError as err:
            if is_context_window_error(err.status_code, err.code, err.message):
                raise ApplicationError(
                    f"the request does not fit the model's context window: {err}",
                    type=ERROR_CONTEXT_WINDOW,
                    non_retryable=True,
                ) from err
            _raise_named(err)
            raise
        if not completion.choices:
            raise ApplicationError("the model returned no choices", type="LlmEmptyResponse")
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


def _raise_named(err: openai.APIStatusError) -> None:
    """Refusals a retry cannot heal, named so the retry policy stops at once."""
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        raise ApplicationError(
            f"the model refused the credentials: {err}", type="LlmAuthentication", non_retryable=True
        ) from err
    if isinstance(err, openai.BadRequestError | openai.NotFoundError | openai.UnprocessableEntityError):
        raise ApplicationError(
            f"the model rejected the request: {err}", type="LlmBadRequest", non_retryable=True
        ) from err
