"""A model whose context window is smaller than the conversation's budget assumed: its 400
`context_length_exceeded` compacts the transcript and the call is made once more; when even the
compacted transcript does not fit, the turn fails and says why."""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import ScriptedHttpError, approximate_tokens, text_reply, tool_reply
from doors.control import send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import TURN_EVENTS, Db, eventually, full_transcript, new_workspace, rows, wait_status
from tests.support.scripts import ScriptedModel, last_role, tool_results
from worker import build_worker

WINDOW = 2_000
BUDGET = 50_000  # what the conversation believes: far more than the model takes


class SmallWindow:
    """Answers like the long-run model, but refuses any request above `window` tokens the way
    OpenAI does (HTTP 400, code context_length_exceeded); counts its refusals."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.refused = 0

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if approximate_tokens(messages) > self.window:
            self.refused += 1
            raise ScriptedHttpError(
                400,
                f"This model's maximum context length is {self.window} tokens. However, your messages resulted "
                f"in {approximate_tokens(messages)} tokens. Please reduce the length of the messages.",
                code="context_length_exceeded",
            )
        if last_role(messages) == "tool":
            return text_reply(f"read {len(tool_results(messages))} file(s)")
        return tool_reply(*[(f"r{n}", "read_file", {"path": f"f{n}.txt"}) for n in range(3)])


def write_files(settings: Settings) -> str:
    """The files of a conversation about to start; its id."""
    planned, ws = new_workspace(settings)
    for n in range(3):
        (ws / f"f{n}.txt").write_text(f"file {n} " * 200)
    return planned


async def turns_ended(db: Db, conversation_id: str, count: int) -> None:
    """Until the read model shows `count` turns of the conversation ended, completed or failed."""

    async def check() -> bool | None:
        events = [r["event_type"] for r in rows(db, TURN_EVENTS, conversation_id)]
        return events.count("turn.completed") + events.count("turn.failed") >= count or None

    await eventually(check)


async def test_context_window_error_compacts_and_the_conversation_goes_on(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings = dataclasses.replace(settings, context_budget_tokens=BUDGET)
    planned = write_files(settings)
    behaviour = model.behaviour = SmallWindow(WINDOW)
    db = settings.approvals_db
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "read batch 0", planned))
        await wait_status(client, cid, "idle")
        for n in range(1, 4):
            await send_message(client, cid, f"read batch {n}")
            await turns_ended(db, cid, n + 1)  # "idle" alone may still be the turn before
            state = await wait_status(client, cid, "idle")

    events = [r["event_type"] for r in rows(db, TURN_EVENTS, cid)]
    assert events.count("turn.completed") == 4 and "turn.failed" not in events
    assert behaviour.refused >= 1
    assert events.count("conversation.compacted") >= behaviour.refused
    transcript = full_transcript(db, state)
    assert [m.content for m in transcript if m.role == "user"] == [f"read batch {n}" for n in range(4)]
    # Each assistant message was asked for once, plus once per refused request.
    assert len(model.reply_requests) == sum(1 for m in transcript if m.role == "assistant") + behaviour.refused
    # One refusal taught the conversation a smaller budget: every later request fits the window.
    sizes = [approximate_tokens(body["messages"]) for body in model.reply_requests]
    refused_at = next(i for i, size in enumerate(sizes) if size > WINDOW)
    assert behaviour.refused == 1 and max(sizes[refused_at + 1 :]) <= WINDOW


async def test_a_window_too_small_even_after_compaction_fails_the_turn_with_the_reason(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings = dataclasses.replace(settings, context_budget_tokens=BUDGET)
    planned = write_files(settings)
    behaviour = model.behaviour = SmallWindow(WINDOW)
    db = settings.approvals_db
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "read batch 0", planned))
        await wait_status(client, cid, "idle")
        behaviour.window = 10  # the model now takes nothing at all
        await send_message(client, cid, "read batch 1")
        state = await wait_status(client, cid, "failed")

    assert state.last_error is not None
    assert state.last_error.startswith("the model's context window is too small even after compacting")
    assert "context_length_exceeded" in state.last_error or "maximum context length" in state.last_error
    # Turn 1: two requests; turn 2: the refused one, one summarise, the refused retry. No more.
    assert (len(model.reply_requests), len(model.summary_requests), behaviour.refused) == (4, 1, 2)
    failed = rows(
        db, "SELECT payload_json FROM ui_events WHERE conversation_id = ? AND event_type = 'turn.failed'", cid
    )
    assert len(failed) == 1 and "context window is too small" in failed[0]["payload_json"]
