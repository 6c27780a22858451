"""`starter.py move CONVERSATION --to HOST` re-pins a conversation whose host is gone: its next
tools run on the new host, the move is an update in history, and it is refused while a tool runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.contract import UPDATE_MOVE
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_pending, wait_status, workspace_of
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, last_role
from worker import build_worker

# The shell marks that it runs, then waits for the test's flag: the move is asked while a tool runs.
RUNNING, GO = "running.flag", "go.flag"


def one_call_per_turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "tool":
        return text_reply("done")
    text = str(messages[-1]["content"])
    if text == "wait for the flag":
        return tool_reply(
            ("s1", "run_shell", {"command": f"touch {RUNNING}; while [ ! -f {GO} ]; do sleep 0.1; done; echo ok"})
        )
    name = text.removeprefix("write ")
    return tool_reply((f"w-{name}", "write_file", {"path": f"{name}.txt", "content": name}))


async def test_move_repins_a_conversation_whose_host_is_gone_and_refuses_while_a_tool_runs(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = one_call_per_turn
    host_a = replace(settings, worker_host="host-a", workspace_dir=tmp_path / "workspace-a")
    host_b = replace(settings, worker_host="host-b", workspace_dir=tmp_path / "workspace-b")
    async with build_worker(client, host_a):
        cid = histories.track(await start_conversation(client, settings, "write a"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle")
    # The conversation's own workspace on each host.
    on_a, on_b = workspace_of(host_a, cid), workspace_of(host_b, cid)
    assert (on_a / "a.txt").read_text() == "a"

    async with build_worker(client, host_b):  # host A is gone for good
        await send_message(client, cid, "write b")
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        moved = await run_cli(settings, client, "move", cid, "--to", "host-b")
        assert moved.returncode == 0, moved.stderr
        assert "host-b" in moved.stdout
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle")
        assert (on_b / "b.txt").read_text() == "b"

        await send_message(client, cid, "wait for the flag")
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await eventually(lambda: _exists(on_b / RUNNING))
        refused = await run_cli(settings, client, "move", cid, "--to", "host-a")
        (on_b / GO).write_text("")
        await wait_status(client, cid, "idle")

    assert refused.returncode == 3, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "tool" in refused.stderr
    assert not (on_a / "b.txt").exists()
    history = await client.get_workflow_handle(cid).fetch_history()
    accepted = [
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history.events
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert accepted.count(UPDATE_MOVE) == 1, "the move is in history, the refused one is not"


async def _exists(path: Path) -> bool:
    return path.exists()
