"""A conversation far longer than the model's context: compaction keeps every model call within the
budget, the turns all complete, and nothing outside the transcript (kv, always-allow) is lost.
Thirty-two turns under `make test-scale` (13 compactions), eighteen in `make test` (6: past the
five the test asks for)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import approximate_tokens, text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import (
    TURN_EVENTS,
    archived,
    eventually,
    full_transcript,
    new_workspace,
    rows,
    wait_pending,
    wait_status,
    workspace_of,
)
from tests.support.scale import at_scale
from tests.support.scripts import ScriptedModel, last_role, tool_results
from worker import build_worker

BUDGET = 30_000
READS_PER_TURN = 20
FILE_BYTES = 16_000
PLAN = {"goal": "ship it", "steps": [1, 2, 3]}


def conversation(batches: int) -> list[str]:
    """The user's turns: remember and write, then batches of reads, then recall and write again."""
    return (
        ["remember the plan", "write first to out.txt"]
        + [f"read batch {n}" for n in range(batches)]
        + ["recall the plan", "write last to out.txt"]
    )


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(str(m["content"]) for m in reversed(messages) if m["role"] == "user")


def worker_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Reads twenty 16 KB files per turn; remembers, recalls and writes when asked."""
    if last_role(messages) == "tool":
        results = tool_results(messages)
        return text_reply(f"{len(results)} result(s), the first begins {str(results[0]['content'])[:40]!r}")
    text = last_user_text(messages)
    if text == "remember the plan":
        return tool_reply(("kv", "kv_set", {"key": "plan", "value": PLAN}))
    if text == "recall the plan":
        return tool_reply(("kv", "kv_get", {"key": "plan"}))
    if text.startswith("write"):
        return tool_reply(("w", "write_file", {"path": "out.txt", "content": text}))
    return tool_reply(*[(f"r{n}", "read_file", {"path": f"f{n}.txt"}) for n in range(READS_PER_TURN)])


def assert_calls_meet_results(messages: list[dict[str, Any]]) -> None:
    """Every tool call the model is sent has its result right after it, and no result is orphaned."""
    expected: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert expected, f"a tool result without its call: {message['tool_call_id']}"
            assert message["tool_call_id"] == expected.pop(0)
            continue
        assert not expected, f"calls without results before a {message['role']} message: {expected}"
        expected = [call["id"] for call in message.get("tool_calls") or []]
    assert not expected, f"the request ends with unanswered calls {expected}"


async def largest_event_bytes(client: Client, conversation_id: str) -> int:
    """The biggest event in every run of the conversation (payloads included)."""
    largest = 0
    async for execution in client.list_workflows(f"WorkflowId = '{conversation_id}'"):
        history = await client.get_workflow_handle(conversation_id, run_id=execution.run_id).fetch_history()
        largest = max(largest, *(event.ByteSize() for event in history.events))
    return largest


# The hang guard: at full size this conversation took 252 s on a slow evening (the default guard is 300 s).
@pytest.mark.timeout(600)
@at_scale("batches", quick=14, full=28)
async def test_turns_of_big_tool_results_stay_within_the_budget(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, batches: int
) -> None:
    turns = conversation(batches)
    settings = dataclasses.replace(settings, context_budget_tokens=BUDGET)
    planned, ws = new_workspace(settings)
    for n in range(READS_PER_TURN):
        line = f"file {n}: " + "lorem ipsum dolor sit amet " * 3 + "\n"
        (ws / f"f{n}.txt").write_text((line * (FILE_BYTES // len(line) + 1))[:FILE_BYTES])
    model.behaviour = worker_model
    db = settings.approvals_db
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, turns[0], planned))
        await wait_status(client, cid, "idle")
        await send_message(client, cid, turns[1])
        [row] = await wait_pending(db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="always_allow"))
        await wait_status(client, cid, "idle")
        for text in turns[2:]:
            await send_message(client, cid, text)
            state = await wait_status(client, cid, "idle", timeout=60)

    events = [r["event_type"] for r in rows(db, TURN_EVENTS, cid)]
    assert events.count("turn.completed") == len(turns) and "turn.failed" not in events
    compactions = events.count("conversation.compacted")
    assert compactions >= 5, f"only {compactions} compaction(s)"

    # The model was asked once per assistant message; summarise requests are counted apart.
    transcript = full_transcript(db, state)
    assert len(model.reply_requests) == sum(1 for m in transcript if m.role == "assistant")
    assert len(model.summary_requests) == compactions
    assert [m.content for m in transcript if m.role == "user"] == turns
    assert [r["seq"] for r in archived(db, cid)] == list(range(1, state.archived_messages + 1))

    # Every request fitted the budget, and no tool call was ever sent apart from its result.
    for body in model.reply_requests:
        assert approximate_tokens(body["messages"]) + approximate_tokens(body["tools"]) <= BUDGET
        assert_calls_meet_results(body["messages"])
    for body in model.summary_requests:
        assert approximate_tokens(body["messages"]) <= BUDGET

    # No event of any run comes near Temporal's 2 MB payload limit.
    largest = await largest_event_bytes(client, cid)
    assert largest < 1_000_000, f"an event of {largest} bytes"

    # What lives outside the transcript survived every compaction.
    assert state.kv == {"plan": PLAN}
    assert [m.content for m in transcript if m.role == "tool"][-2] == '{"goal": "ship it", "steps": [1, 2, 3]}'
    assert state.always_allow == ["write_file"]
    assert len(rows(db, "SELECT * FROM ui_pending_approvals WHERE conversation_id = ?", cid)) == 1
    assert (workspace_of(settings, cid) / "out.txt").read_text() == "write last to out.txt"


async def test_a_short_conversation_compacts_twice_and_keeps_its_latest_turn_whole(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings = dataclasses.replace(settings, context_budget_tokens=2_000)
    planned, ws = new_workspace(settings)
    (ws / "f0.txt").write_text("a short note\n" * 150)
    model.behaviour = lambda messages: (
        text_reply("noted") if last_role(messages) == "tool" else tool_reply(("r", "read_file", {"path": "f0.txt"}))
    )
    db = settings.approvals_db
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "note 1", planned))
        await wait_status(client, cid, "idle")
        for n in range(2, 7):
            await send_message(client, cid, f"note {n}")
            await wait_status(client, cid, "idle")

        async def six_turns_written() -> bool:  # an idle state may be the last turn's, not the sixth's
            return [r["event_type"] for r in rows(db, TURN_EVENTS, cid)].count("turn.completed") == 6

        await eventually(six_turns_written)
        state = await wait_status(client, cid, "idle")

    events = [r["event_type"] for r in rows(db, TURN_EVENTS, cid)]
    assert events.count("conversation.compacted") >= 2 and events.count("turn.completed") == 6
    summary, *recent = state.messages[1:]
    assert summary.name == "conversation_summary" and "The person asked: note" in (summary.content or "")
    assert recent[0].role == "user", "whole turns are kept when they fit"
    assert [m.content for m in recent if m.role == "user"][-1] == "note 6"
    assert [m.content for m in full_transcript(db, state) if m.role == "user"] == [f"note {n}" for n in range(1, 7)]
    assert len(model.reply_requests) == 12 and len(model.summary_requests) == events.count("conversation.compacted")
