"""Compaction keeps what matters: a fold that reaches into the current turn keeps the person's
request word for word, and a summary the model cannot write folds nothing (long tool results are
clipped instead, and the summary is tried again later)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.script import scripted_summary
from demo_model.server import ScriptedHttpError, text_reply, tool_reply
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import TURN_EVENTS, eventually, new_workspace, rows, wait_status
from tests.support.scripts import ScriptedModel, last_role
from worker import build_worker

BUDGET = 2_000
READS = 6
# Longer than any summary quotes a request, with the detail the model needs at its end.
REQUEST = "Read the six reports one after the other, " + "carefully, " * 20 + "then name the colour ZEBRA-42."


def reader(reads: int) -> Any:
    """One 1.8 KB file per step, then an answer: every step of the one turn adds a big tool result."""
    steps = itertools.count()

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        n = next(steps)
        if n < reads:
            return tool_reply((f"r{n}", "read_file", {"path": f"report{n}.txt"}))
        return text_reply("the colour is ZEBRA-42")

    return behave


def write_reports(settings: Settings) -> tuple[Settings, str]:
    """The small budget, and the id of a conversation whose workspace holds the six reports."""
    settings = dataclasses.replace(settings, context_budget_tokens=BUDGET)
    planned, ws = new_workspace(settings)
    for n in range(READS):
        (ws / f"report{n}.txt").write_text(f"report {n}: " + "figures " * 220)
    return settings, planned


def texts(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


async def test_a_fold_into_the_current_turn_keeps_the_request_word_for_word(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings, planned = write_reports(settings)
    model.behaviour = reader(READS)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, REQUEST, planned))
        state = await wait_status(client, cid, "idle")

        async def turn_recorded() -> list[str]:  # the read model trails the workflow's own state
            found = [r["event_type"] for r in rows(settings.approvals_db, TURN_EVENTS, cid)]
            return found if "turn.completed" in found else []

        events = await eventually(turn_recorded)
    assert events.count("conversation.compacted") >= 1 and events.count("turn.completed") == 1
    assert model.summary_requests, "the turn's tool results were folded"
    assert len(model.reply_requests) == READS + 1
    for body in model.reply_requests:
        assert REQUEST in texts(body), "a request to the model lost what the person asked"
    assert not any(m.role == "user" for m in state.messages), "the request itself was folded (and archived)"


async def test_a_failed_summary_folds_nothing_clips_tool_results_and_is_retried(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings, planned = write_reports(settings)
    model.behaviour = reader(READS)
    attempts = itertools.count()

    def summarise_the_second_time(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if next(attempts) == 0:
            raise ScriptedHttpError(400, "the summary model is unavailable")
        return scripted_summary(messages)

    model.summariser = summarise_the_second_time
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, REQUEST, planned))
        state = await wait_status(client, cid, "idle")

    assert len(model.summary_requests) >= 2, "the summary was not tried again"
    assert state.turn_status == "idle" and (state.messages[-1].content or "") == "the colour is ZEBRA-42"
    everything = [texts(body) for body in model.requests] + [m.content or "" for m in state.messages]
    assert not any("No summary" in text for text in everything), "a failed summary replaced the messages"
    # The reply right after the failure still had every tool result (one more than the reply before), clipped.
    first_failure = model.requests.index(model.summary_requests[0])
    after = model.requests[first_failure + 1]
    results = [m for m in after["messages"] if m["role"] == "tool"]
    before = [m for m in model.requests[first_failure - 1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == [f"r{n}" for n in range(len(before) + 1)], "a result was folded"
    assert any("not shown to the model" in str(m["content"]) for m in results)
    summaries = [m for m in state.messages if m.name == "conversation_summary"]
    assert summaries and "(No summary" not in (summaries[0].content or "")
    assert last_role(after["messages"]) == "tool"
