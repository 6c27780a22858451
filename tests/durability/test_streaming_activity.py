"""call_llm with streaming on: the reply it returns is what it streamed, in few writes."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm import LlmActivities
from activities.stream_publisher import EVENT_MESSAGE_DELTA, DeltaPublisher
from config.settings import ConfigError, Settings
from core.chat_model import ChatMessage, LlmRequest, ToolCall
from core.projection_model import ProjectionEvent
from demo_model.server import text_reply, tool_reply
from demo_model.streaming import pieces
from storage.store import ProjectionStore
from tests.support.scripts import ScriptedModel

LONG_TEXT = "".join(f"word{n} <b>&amp;</b> " for n in range(150))  # 3,000 characters, 750 pieces

# The activities run without a worker here: the fixture closes the clients their calls make.
pytestmark = pytest.mark.usefixtures("model_clients")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ProjectionStore]:
    projection = ProjectionStore(tmp_path / "approvals.db")
    yield projection
    await projection.close()


def request(purpose: str = "reply") -> LlmRequest:
    return LlmRequest(
        conversation_id="conv-s",
        turn_id="turn-1",
        messages=[ChatMessage(role="user", content="go")],
        tools=[],
        purpose=purpose,  # type: ignore[arg-type]
    )


def llm(model: ScriptedModel, store: ProjectionStore, stream: bool = True) -> LlmActivities:
    assert model.server is not None
    return LlmActivities(model.server.base_url, "k", "scripted", stream=stream, deltas=store)


async def deltas(store: ProjectionStore) -> list[dict[str, Any]]:
    events, _ = await store.events(0, "conv-s")
    assert all(e["event_type"] == EVENT_MESSAGE_DELTA for e in events)
    return [e["payload"] for e in events]


async def run(activities: LlmActivities, attempt: int = 1, purpose: str = "reply") -> Any:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    return await env.run(activities.call_llm, request(purpose))


async def test_the_reply_is_the_streamed_text_in_few_events(model: ScriptedModel, store: ProjectionStore) -> None:
    model.behaviour = lambda messages: text_reply(LONG_TEXT)
    reply = await run(llm(model, store))
    found = await deltas(store)
    assert reply.content == LONG_TEXT
    assert "".join(d["text"] for d in sorted(found, key=lambda d: d["seq"])) == LONG_TEXT
    assert [d["seq"] for d in found] == list(range(1, len(found) + 1))
    assert all(d["offset"] == sum(len(e["text"]) for e in found[:i]) for i, d in enumerate(found))
    assert found[-1].get("done") is True and not any(d.get("done") for d in found[:-1])
    assert {(d["turn_id"], d["attempt"]) for d in found} == {("turn-1", 1)}
    # Batched: a write per flush interval, not per piece.
    assert len(found) <= len(pieces(LONG_TEXT)) // 4
    assert model.requests[0]["stream"] is True


async def test_tool_call_deltas_assemble(model: ScriptedModel, store: ProjectionStore) -> None:
    arguments = {"path": "notes.txt", "content": "x" * 100 + ' \u00e9\u4e2d "quoted"'}
    model.behaviour = lambda messages: tool_reply(
        ("call_a", "write_file", arguments), ("call_b", "run_shell", {"command": "echo hi"}), text="Doing both."
    )
    reply = await run(llm(model, store))
    expected = tool_reply(("call_a", "write_file", arguments), ("call_b", "run_shell", {"command": "echo hi"}))
    assert reply.tool_calls == [
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
        for c in expected["tool_calls"]
    ]
    assert reply.content == "Doing both."
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    assert "".join(d["text"] for d in await deltas(store)) == "Doing both."


async def test_a_tool_call_without_text_has_no_content(model: ScriptedModel, store: ProjectionStore) -> None:
    model.behaviour = lambda messages: tool_reply(("call_a", "list_dir", {"path": "."}))
    reply = await run(llm(model, store))
    assert reply.content is None and [c.name for c in reply.tool_calls] == ["list_dir"]


async def test_a_retried_call_says_it_restarted(model: ScriptedModel, store: ProjectionStore) -> None:
    model.behaviour = lambda messages: text_reply("second try")
    reply = await run(llm(model, store), attempt=2)
    found = await deltas(store)
    assert found[0] == {**found[0], "attempt": 2, "seq": 1, "text": "", "restarted": True}
    assert reply.content == "second try" == "".join(d["text"] for d in found)


async def test_a_stream_cut_off_is_an_error_not_a_short_reply(model: ScriptedModel, store: ProjectionStore) -> None:
    assert model.server is not None
    model.server.cut_streams = 1
    model.behaviour = lambda messages: text_reply(LONG_TEXT)
    with pytest.raises(ApplicationError) as raised:
        await run(llm(model, store))
    assert raised.value.type == "LlmStreamCut" and not raised.value.non_retryable
    found = await deltas(store)
    assert found and not any(d.get("done") for d in found)
    assert LONG_TEXT.startswith("".join(d["text"] for d in found))


async def test_without_streaming_the_reply_is_the_same_and_nothing_streams(
    model: ScriptedModel, store: ProjectionStore
) -> None:
    model.behaviour = lambda messages: text_reply(LONG_TEXT)
    reply = await run(llm(model, store, stream=False))
    assert reply.content == LONG_TEXT and await deltas(store) == []
    assert "stream" not in model.requests[0]


async def test_a_summary_request_streams_nothing(model: ScriptedModel, store: ProjectionStore) -> None:
    model.behaviour = lambda messages: text_reply("a summary")
    reply = await run(llm(model, store), purpose="summarise")
    assert reply.content == "a summary" and await deltas(store) == []


async def test_the_publisher_flushes_once_per_interval() -> None:
    written: list[ProjectionEvent] = []

    class Sink:
        async def append_stream_event(self, event: ProjectionEvent) -> None:
            written.append(event)

    now = [0.0]
    publisher = DeltaPublisher(
        Sink(), conversation_id="c", turn_id="t", call_key="run:1", call_id="1", attempt=1, clock=lambda: now[0]
    )
    for _ in range(100):  # a piece every 10 ms for one second
        await publisher.add("ab")
        now[0] += 0.01
    await publisher.finish()
    assert 10 <= len(written) <= 12
    assert "".join(e.payload["text"] for e in written) == "ab" * 100
    assert len({e.event_key for e in written}) == len(written)


def test_llm_stream_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLM_STREAM", raising=False)
    assert Settings().llm_stream is True
    monkeypatch.setenv("LLM_STREAM", "off")
    assert Settings().llm_stream is False
    monkeypatch.setenv("LLM_STREAM", "sometimes")
    with pytest.raises(ConfigError):
        Settings()
