"""SIGKILL the worker while a subagent waits for a person and while a subagent's tool runs.

A new worker finishes both delegations: the approved write happens once, the killed tool is not
run again (its outcome is reported unknown), and the model is asked once per assistant message in
parent and child alike.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.failure_support import by_marker, holds, lines, projection_catches_up, wait_turn, worker_process
from tests.support.helpers import approval_row, tool_messages, wait_pending, workspace_of
from tests.support.scripts import ScriptedModel, delegation
from workflows.delegation import child_conversation_id

WAITS, RUNS = "a: the child waits", "b: the child's tool runs"
WAITS_TASK, RUNS_TASK = "write waits.txt", "append to runs.log"


async def test_worker_killed_while_children_wait_and_run(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    db = settings.approvals_db
    waits = delegation(WAITS_TASK, ("w1", "write_file", {"path": "waits.txt", "content": "once"}))
    runs = delegation(RUNS_TASK, ("s1", "run_shell", {"command": "echo x >> runs.log; sleep 30"}))
    model.behaviour = by_marker({WAITS: waits, WAITS_TASK: waits, RUNS: runs, RUNS_TASK: runs})

    with worker_process(settings, client, tmp_path / "worker-1.log") as first:
        parents = {m: histories.track(await start_conversation(client, settings, m)) for m in (WAITS, RUNS)}
        children = {m: histories.track(child_conversation_id(cid, "d1")) for m, cid in parents.items()}
        [waiting] = await wait_pending(db, children[WAITS], 1)
        [running] = await wait_pending(db, children[RUNS], 1)
        await send_decision(client, settings, DecisionInput(request_id=running["request_id"], decision="allow"))
        await holds(lambda: lines(workspace_of(settings, parents[RUNS]) / "runs.log") == ["x"])
        await projection_catches_up(client, db, children[WAITS])
        first.kill()

    # No worker runs: the decision goes out as a signal and waits in the child's history.
    await send_decision(client, settings, DecisionInput(request_id=waiting["request_id"], decision="allow"))

    with worker_process(settings, client, tmp_path / "worker-2.log"):
        states = {m: await wait_turn(client, parents[m], "idle") for m in (WAITS, RUNS)}

    assert (workspace_of(settings, parents[WAITS]) / "waits.txt").read_text() == "once"
    assert approval_row(db, waiting["request_id"])["execution_state"] == "done"
    assert tool_messages(states[WAITS]) == ["results: Wrote 4 bytes to waits.txt"]
    assert lines(workspace_of(settings, parents[RUNS]) / "runs.log") == ["x"], "the killed tool is not run again"
    [runs_answer] = tool_messages(states[RUNS])
    assert "Outcome unknown" in runs_answer, "the child was told, and its answer reached the parent"
    # Two assistant messages in each parent and each child, each asked for once.
    for marker in (WAITS, WAITS_TASK, RUNS, RUNS_TASK):
        assert model.assistant_messages_requested_for(marker) == 2, marker
