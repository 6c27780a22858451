"""What the OpenAI-compatible servers people run need, shown against a scripted server that behaves
as they do: tools offered with `tool_choice: "auto"`, an assistant message with tool calls and no
text sent with `""`, and answers to a stream request that hold no stream still ending the turn."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ConversationState, DecisionInput
from demo_model.server import Responder, ScriptedHttpError, text_reply
from doors.control import get_state, send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_pending, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

WRITE = ("call_1", "write_file", {"path": "notes.txt", "content": "hello"})


def like_llama_cpp(respond: Responder) -> Responder:
    """llama-cpp-python's server with chatml-function-calling: a missing tool_choice means "none"
    (text only), and an assistant message whose content is null is answered with a 500."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        for message in body["messages"]:
            if message["role"] == "assistant" and message.get("content") is None:
                raise ScriptedHttpError(500, "'NoneType' object has no attribute 'strip'")
        reply = respond(body)
        if body.get("tools") and body.get("tool_choice", "none") == "none":
            return text_reply("I would write the file now.")
        return reply

    return answer


async def settled(client: Client, conversation_id: str) -> ConversationState:
    async def check() -> ConversationState | None:
        state = await get_state(client, conversation_id)
        return None if state.turn_status == "running" else state

    return await eventually(check)


async def approve_first(client: Client, settings: Settings, conversation_id: str) -> None:
    [row] = await wait_pending(settings.approvals_db, conversation_id, 1)
    decision = DecisionInput(request_id=row["request_id"], decision="allow", decided_by="alice")
    await send_decision(client, settings, decision)


async def test_offered_tools_go_with_tool_choice_auto(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    assert model.server is not None
    model.behaviour = calls_then_summary(WRITE)
    model.server.responder = like_llama_cpp(model.respond)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write hello to notes.txt"))
        state = await settled(client, cid)
    assert state.turn_status == "awaiting_approval", state.messages[-1].content
    assert model.requests[0]["tools"] and model.requests[0]["tool_choice"] == "auto"


async def test_a_tool_call_without_text_goes_back_with_empty_content(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    assert model.server is not None
    model.behaviour = calls_then_summary(WRITE)
    model.server.responder = like_llama_cpp(model.respond)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write hello to notes.txt"))
        await approve_first(client, settings, cid)
        state = await settled(client, cid)
    assert state.turn_status == "idle", state.last_error
    assert state.messages[-1].content == "results: Wrote 5 bytes to notes.txt"
    [called] = [m for m in model.requests[-1]["messages"] if m["role"] == "assistant"]
    assert called["content"] == "" and called["tool_calls"][0]["id"] == "call_1"
    assert len(model.requests) == 2


@pytest.mark.parametrize(("stream_as", "extra_requests"), [("json", 0), ("empty", 1), ("no_data_lines", 1)])
async def test_a_stream_request_answered_without_a_stream_ends_the_turn(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    caplog: pytest.LogCaptureFixture,
    stream_as: str,
    extra_requests: int,
) -> None:
    assert model.server is not None and settings.llm_stream
    model.server.stream_as = stream_as
    model.behaviour = calls_then_summary(WRITE)
    with caplog.at_level(logging.WARNING, logger="activities.llm"):
        async with build_worker(client, settings):
            cid = histories.track(await start_conversation(client, settings, "write hello to notes.txt"))
            await approve_first(client, settings, cid)
            state = await wait_status(client, cid, "idle")
            # A second conversation on the same worker asks the endpoint without streaming at once.
            other = histories.track(await start_conversation(client, settings, "write it again"))
            await wait_status(client, other, "awaiting_approval")
    assert state.messages[-1].content == "results: Wrote 5 bytes to notes.txt"
    # Two model calls in the first conversation, one in the second; at most one request more.
    assert len(model.requests) == 3 + extra_requests
    assert model.requests[0].get("stream") is True
    assert not any(body.get("stream") for body in model.requests[1:])
    said = [r.getMessage() for r in caplog.records if "does not stream" in r.getMessage()]
    assert len(said) == 1 and model.server.base_url in said[0]
