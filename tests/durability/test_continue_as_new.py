"""A 200-turn conversation (60 in `make test`) that continues-as-new every few turns keeps
everything it holds.

Messages keep arriving while turns run and runs switch, and decisions go out (by signal and by
update) the moment a request appears, so some land right as a turn ends and the run switches.
Nothing may be lost: every message gets its turn, every decision its effect, the transcript,
always-allow and key/value state carry over, and the conversation id never changes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import ERROR_ALREADY_RESOLVED, SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE, WORKFLOW_TYPE
from core.conversation_model import ConversationInput, Decision, DecisionInput
from core.policy import DEFAULT_RULES
from demo_model.server import text_reply, tool_reply
from doors.control import get_state, send_decision, send_message
from tests.conftest import HistoryRecorder
from tests.support.failure_support import assert_projection_matches, assistant_count, holds, lines
from tests.support.helpers import new_workspace, pending_rows, rows, tool_messages, workspace_of
from tests.support.scale import at_scale
from tests.support.scripts import ScriptedModel, last_role
from worker import build_worker

BIG_TURN = 60
BIG_TEXT = "0123456789" * 5000  # 50,000 characters; the limit is 16,000
SECONDS_PER_TURN = 5  # the many-turns test's budget per turn: about 0.4 s alone, over 1.2 s in a loaded CI run


def kind(n: int) -> str:
    if n == BIG_TURN:
        return "read_big"
    if n % 20 == 5:
        return "write"  # asked the first time, then always allowed
    if n % 20 == 10:
        return "shell"  # asked every time: allowed on odd tens, denied on even ones
    return "kv"


def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
    user_text = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    n = int(str(user_text).removeprefix("turn "))
    if last_role(messages) != "user":
        return text_reply(f"done {n}")
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "read_big": ("read_file", {"path": "big.txt"}),
        "write": ("write_file", {"path": f"w{n}.txt", "content": str(n)}),
        "shell": ("run_shell", {"command": f"echo {n} >> r{n}.log"}),
        "kv": ("kv_set", {"key": f"k{n}", "value": n}),
    }
    name, args = calls[kind(n)]
    return tool_reply(("call_1", name, args))


def turns_completed(settings: Settings, cid: str) -> int:
    found = rows(
        settings.approvals_db,
        "SELECT count(*) AS n FROM ui_events WHERE conversation_id = ? AND event_type = 'turn.completed'",
        cid,
    )
    return int(found[0]["n"]) if found else 0


# A hang guard, not a timed check: 200 turns take about 80 s alone and over 240 s beside the other
# scale tests on a loaded two-core machine (CI); its wait is SECONDS_PER_TURN a turn.
@pytest.mark.timeout(1200)
@at_scale("turns", quick=60, full=200)
async def test_many_turns_across_many_runs_lose_nothing(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, turns: int
) -> None:
    model.behaviour = behave
    cid = histories.track(f"conv-long-{turns}")
    (new_workspace(settings, cid)[1] / "big.txt").write_text(BIG_TEXT)
    start = ConversationInput(
        conversation_id=cid,
        policy=DEFAULT_RULES,
        approval_timeout_seconds=3600,
        inbox=["turn 1"],
        continue_as_new_after_events=150,
    )
    async with build_worker(client, settings):
        await client.start_workflow(WORKFLOW_TYPE, start, id=cid, task_queue=settings.task_queue)
        handle = client.get_workflow_handle(cid)
        decided: dict[str, str] = {}

        async def pump() -> None:
            """Keep a few messages queued, so some arrive while a run hands over to the next."""
            for n in range(2, turns + 1):
                behind = n - 3
                await holds(lambda: turns_completed(settings, cid) >= behind, timeout=60)  # noqa: B023
                await send_message(client, cid, f"turn {n}")

        async def decider() -> None:
            while turns_completed(settings, cid) < turns:
                for row in pending_rows(settings.approvals_db, cid):
                    rid = row["request_id"]
                    if rid in decided:
                        continue
                    n = int(row["turn_id"].removeprefix("turn_"))
                    decision: Decision = "always_allow" if kind(n) == "write" else ("allow" if n % 40 == 10 else "deny")
                    decided[rid] = decision
                    if kind(n) == "shell" and n % 80 == 10:
                        await handle.execute_update(UPDATE_DECIDE, DecisionInput(request_id=rid, decision=decision))
                    else:
                        await send_decision(client, settings, DecisionInput(request_id=rid, decision=decision))
                    # A late contrary decision, often landing as the turn ends and the run switches: ignored.
                    contrary: Decision = "deny" if decision != "deny" else "allow"
                    await handle.signal(SIGNAL_APPROVAL_DECISION, DecisionInput(request_id=rid, decision=contrary))
                await asyncio.sleep(0.02)

        await asyncio.wait_for(asyncio.gather(pump(), decider()), timeout=SECONDS_PER_TURN * turns)
        state = await get_state(client, cid)

        # A decision repeated after many switches is still refused: resolutions carry over.
        first = next(iter(decided))
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(UPDATE_DECIDE, DecisionInput(request_id=first, decision="deny"))
        assert isinstance(refused.value.cause, ApplicationError)
        assert refused.value.cause.type == ERROR_ALREADY_RESOLVED

    runs = [execution async for execution in client.list_workflows(f"WorkflowId = '{cid}'")]
    assert len(runs) > 10, "the conversation should have continued-as-new many times"
    assert state.conversation_id == cid and state.turn_status == "idle"
    assert [m.content for m in state.messages if m.role == "user"] == [f"turn {n}" for n in range(1, turns + 1)]
    replies = [m.content for m in state.messages if m.role == "assistant" and not m.tool_calls]
    assert replies == [f"done {n}" for n in range(1, turns + 1)]
    assert model.assistant_messages_requested_for("turn 1") == assistant_count(state) == 2 * turns
    assert state.kv == {f"k{n}": n for n in range(1, turns + 1) if kind(n) == "kv"}
    assert state.always_allow == ["write_file"]

    # Decisions: one ask for write_file (always allowed), then none; shell asks each time.
    assert sorted(decided.values()).count("always_allow") == 1
    assert len(decided) == 1 + len([n for n in range(1, turns + 1) if kind(n) == "shell"])
    ws = workspace_of(settings, cid)
    for n in range(1, turns + 1):
        if kind(n) == "write":
            assert (ws / f"w{n}.txt").read_text() == str(n)
        if kind(n) == "shell":
            assert lines(ws / f"r{n}.log") == ([str(n)] if n % 40 == 10 else [])

    # The huge result is stored truncated, with a marker the model can read.
    [big] = [text for text in tool_messages(state) if text.startswith("0123456789")]
    assert big == BIG_TEXT[:16_000] + "\n[... truncated: 34000 more characters not shown ...]"

    # One conversation in the projection, every turn's event exactly once.
    assert_projection_matches(settings.approvals_db, state)
    assert turns_completed(settings, cid) == turns
