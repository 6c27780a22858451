"""A conversation's tools run on one host, chosen once and recorded in history.

A tool goes first to the workflow's own queue marked with that host (the worker holding the
workflow takes it at once when it is on that host); a worker of another host runs nothing and
the call goes to the host's own queue.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows.activity_calls import EXECUTE_TOOL, PICK_TOOL_HOST, PROJECT_APPROVAL_RESOLVED
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY


async def scheduled(client: Client, conversation_id: str) -> list[tuple[str, str, str | None]]:
    """(activity type, task queue, the host named in a tool request) of every activity scheduled, in order."""
    history = await client.get_workflow_handle(conversation_id).fetch_history()
    out = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            run_on = None
            if attrs.activity_type.name == EXECUTE_TOOL:
                run_on = json.loads(attrs.input.payloads[0].data).get("run_on")
            out.append((attrs.activity_type.name, attrs.task_queue.name, run_on))
    return out


async def test_tools_go_to_the_host_picked_once_for_the_conversation(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("call_1", "list_dir", {"path": "."}), ("call_2", "write_file", {"path": "a.txt", "content": "x"})
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "list, then write"))
        for turn in range(2):
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
            await wait_status(client, cid, "idle")
            if turn == 0:
                await send_message(client, cid, "again")

    activities = await scheduled(client, cid)
    picks = [queue for name, queue, _ in activities if name == PICK_TOOL_HOST]
    tools = [(queue, run_on) for name, queue, run_on in activities if name == EXECUTE_TOOL]
    assert picks == [settings.task_queue], "picked once, by any worker of the shared queue"
    # On the workflow's own queue, marked for the picked host; this worker is that host, so none
    # had to go round by the host's own queue.
    assert tools == [(settings.task_queue, settings.host_queue)] * 4, tools
    # Each approved tool's activity wrote its approval's resolution: no activity of its own.
    assert PROJECT_APPROVAL_RESOLVED not in [name for name, _, _ in activities]
    decided = rows(settings.approvals_db, "SELECT decision FROM ui_pending_approvals WHERE conversation_id = ?", cid)
    assert [row["decision"] for row in decided] == ["allow", "allow"]
    assert [name for name, _, _ in activities].index(PICK_TOOL_HOST) < [n for n, _, _ in activities].index(EXECUTE_TOOL)
    assert (workspace_of(settings, cid) / "a.txt").read_text() == "x"


async def test_a_tool_that_reaches_another_host_runs_only_on_its_own(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    """The conversation is pinned to host A; A stops and B takes the workflow. B's worker gets the
    tool first, runs nothing, and the call waits on A's queue until A is back; it runs there once."""
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "x"}))
    host_a = replace(settings, worker_host="host-a", workspace_dir=tmp_path / "workspace-a")
    host_b = replace(settings, worker_host="host-b", workspace_dir=tmp_path / "workspace-b")
    async with build_worker(client, host_a):
        cid = histories.track(await start_conversation(client, settings, "write a file"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
    async with build_worker(client, host_b):
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))

        async def sent_to_a() -> bool:
            tools = [(q, r) for name, q, r in await scheduled(client, cid) if name == EXECUTE_TOOL]
            return tools == [(settings.task_queue, host_a.host_queue), (host_a.host_queue, None)]

        await eventually(sent_to_a)
        assert not (workspace_of(host_b, cid) / "a.txt").exists(), "host B ran nothing"
        # While the call waits for its host, the read model already shows the decision, and so
        # does Temporal's list: the status held for the tool's result is published on the detour.
        [shown] = rows(settings.approvals_db, "SELECT decision, resolved_at FROM ui_pending_approvals")
        assert shown["decision"] == "allow" and shown["resolved_at"] is not None
        attributes = (await client.get_workflow_handle(cid).describe()).typed_search_attributes
        assert (attributes.get(TURN_STATUS_KEY), attributes.get(PENDING_APPROVALS_KEY)) == ("running", 0)
    async with build_worker(client, host_a):
        state = await wait_status(client, cid, "idle")
    assert (workspace_of(host_a, cid) / "a.txt").read_text() == "x"
    assert not (workspace_of(host_b, cid) / "a.txt").exists()
    assert tool_messages(state) == ["Wrote 1 bytes to a.txt"]
