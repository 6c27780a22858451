"""call_llm: one Chat Completions request through the openai client, retried by Temporal only."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import openai
from temporalio import activity
from temporalio.exceptions import ApplicationError

from workflows.activity_calls import CALL_LLM
from workflows.models import ChatMessage, LlmRequest, ToolCall

T = TypeVar("T")
HEARTBEAT_EVERY_SECONDS = 2.0


async def _heartbeating(call: Awaitable[T]) -> T:
    """Heartbeat while the model thinks, so a worker killed mid-call is retried within the
    heartbeat timeout rather than when start_to_close runs out minutes later."""
    task = asyncio.ensure_future(call)
    try:
        while not task.done():
            activity.heartbeat()
            await asyncio.wait({task}, timeout=HEARTBEAT_EVERY_SECONDS)
        return task.result()
    finally:
        task.cancel()


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
            completion = await _heartbeating(
                self._client.chat.completions.create(
                    model=self._model,
                    messages=[_wire_message(m) for m in request.messages],  # type: ignore[misc]
                    tools=request.tools,  # type: ignore[arg-type]
                )
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
