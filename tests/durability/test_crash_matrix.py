"""SIGKILL the worker at every step of a turn; a new worker finishes every turn, nothing run twice.

Four conversations are caught at four different steps under one kill, to keep the run short:
(a) the model call in flight, (b) approvals waiting, (c) an approved tool running,
(d) between two sibling tools. Decisions for (b) and (d) go out while no worker runs.
"""

from __future__ import annotations

import threading
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import Decision, DecisionInput
from doors.control import get_state, send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.failure_support import (
    assistant_count,
    by_marker,
    held_first,
    holds,
    lines,
    projection_catches_up,
    wait_turn,
    worker_process,
)
from tests.support.helpers import approval_row, eventually, tool_messages, wait_pending, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary

A, B, C, D = "a: llm in flight", "b: approvals wait", "c: approved tool runs", "d: between siblings"


def shell(call_id: str, command: str) -> tuple[str, str, dict[str, str]]:
    return (call_id, "run_shell", {"command": command})


async def decide(client: Client, settings: Settings, request_id: str, decision: Decision) -> None:
    await send_decision(
        client,
        settings,
        DecisionInput(request_id=request_id, decision=decision, decided_by="tester"),
    )


async def test_worker_killed_at_every_step(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    db = settings.approvals_db
    gate = threading.Event()
    model.behaviour = by_marker(
        {
            A: held_first(calls_then_summary(("call_1", "kv_set", {"key": "a", "value": 1})), gate),
            B: calls_then_summary(shell("call_1", "echo allowed >> b.log"), shell("call_2", "echo denied >> b.log")),
            C: calls_then_summary(shell("call_1", "echo x >> c.log; sleep 30")),
            D: calls_then_summary(shell("call_1", "echo d1 >> d.log"), shell("call_2", "echo d2 >> d.log")),
        }
    )
    try:
        with worker_process(settings, client, tmp_path / "worker-1.log") as first:
            ids = {m: histories.track(await start_conversation(client, settings, m)) for m in (A, B, C, D)}

            # Bring each conversation to its step.
            await holds(lambda: model.assistant_messages_requested_for(A) == 1)
            b_rows = sorted(await wait_pending(db, ids[B], 2), key=lambda r: r["request_id"])
            [c_row] = await wait_pending(db, ids[C], 1)
            await decide(client, settings, c_row["request_id"], "allow")
            d_rows = sorted(await wait_pending(db, ids[D], 2), key=lambda r: r["request_id"])
            await decide(client, settings, d_rows[0]["request_id"], "allow")
            await holds(lambda: lines(workspace_of(settings, ids[C]) / "c.log") == ["x"])
            await eventually(lambda: _d1_recorded(client, ids[D]))
            await projection_catches_up(client, db, ids[B])

            first.kill()

        # No worker runs: decisions go out as signals and wait in history.
        await decide(client, settings, b_rows[0]["request_id"], "allow")
        await decide(client, settings, b_rows[1]["request_id"], "deny")
        await decide(client, settings, d_rows[1]["request_id"], "allow")
        gate.set()

        with worker_process(settings, client, tmp_path / "worker-2.log"):
            states = {m: await wait_turn(client, ids[m], "idle") for m in (A, B, C, D)}
            for state in states.values():
                await projection_catches_up(client, db, state.conversation_id)
    finally:
        gate.set()

    # (a) the killed model call was asked again once; every recorded message was asked for once.
    assert states[A].kv == {"a": 1}
    assert model.assistant_messages_requested_for(A) == assistant_count(states[A]) + 1
    for marker in (B, C, D):
        assert model.assistant_messages_requested_for(marker) == assistant_count(states[marker])
    # (b) the allowed tool ran once, the denied one never.
    assert lines(workspace_of(settings, ids[B]) / "b.log") == ["allowed"]
    assert any("tester denied" in text for text in tool_messages(states[B]))
    # (c) the tool's effect happened once, it was not run again, and the model was told so.
    assert lines(workspace_of(settings, ids[C]) / "c.log") == ["x"]
    [c_result] = tool_messages(states[C])
    assert c_result.startswith("Outcome unknown")
    assert approval_row(db, c_row["request_id"])["execution_state"] == "unknown"
    # (d) the sibling that finished before the kill was not run again.
    assert lines(workspace_of(settings, ids[D]) / "d.log") == ["d1", "d2"]
    assert [approval_row(db, r["request_id"])["execution_state"] for r in d_rows] == ["done", "done"]


async def _d1_recorded(client: Client, conversation_id: str) -> bool:
    """The first sibling's result is in history; the second still waits for its decision."""
    state = await get_state(client, conversation_id)
    return len(tool_messages(state)) == 1 and len(state.pending_approvals) == 1
