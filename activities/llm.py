"""call_llm: one Chat Completions request through the openai client, retried by Temporal only."""

from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletion
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import heartbeating
from workflows.activity_calls import CALL_LLM
from workflows.models import ChatMessage, LlmRequest, ToolCall


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


class LlmActivities:
    def __init__(self, base_url: str, api_key: str, model: str, timeout: float = 120.0) -> None:
        # max_retries=0: Temporal's retry policy is the only one, so attempts show in history.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)
        self._model = model

    @activity.defn(name=CALL_LLM)
    async def call_llm(self, request: LlmRequest) -> ChatMessage:
        try:
            # The body is already in wire form: posting it as is skips the client's per-field transform
            # of the params, which costs about a millisecond per message and blocks the worker's event
            # loop for half a second per call once a conversation holds a few hundred messages.
            body: dict[str, Any] = {"model": self._model, "messages": [_wire_message(m) for m in request.messages]}
            if request.tools:
                body["tools"] = request.tools
            completion = await heartbeating(
                self._client.post("/chat/completions", body=body, cast_to=ChatCompletion), activity.heartbeat
            )
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise ApplicationError(
                f"the model refused the credentials: {err}", type="LlmAuthentication", non_retryable=True
            ) from err
        except (openai.BadRequestError, openai.NotFoundError, openai.UnprocessableEntityError) as err:
            raise ApplicationError(
                f"the model rejected the request: {err}", type="LlmBadRequest", non_retryable=True
            ) from err
        if not completion.choices:
            raise ApplicationError("the model returned no choices", type="LlmEmptyResponse")
        message = completion.choices[0].message
        tool_calls = [
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
            for call in message.tool_calls or []
            if call.type == "function"
        ]
        return ChatMessage(role="assistant", content=message.content, tool_calls=tool_calls)
