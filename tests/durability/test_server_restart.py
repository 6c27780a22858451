"""SIGKILL the Temporal server while approvals wait; restarted on the same database file, it still
holds them, and decisions made after the restart complete the turns."""

from __future__ import annotations

from pathlib import Path

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.support.failure_support import (
    assistant_count,
    by_marker,
    lines,
    projection_catches_up,
    replay_recorded,
    wait_turn,
    worker_process,
)
from tests.support.helpers import tool_messages, wait_pending, workspace_of
from tests.support.processes import DevServer
from tests.support.scripts import ScriptedModel, calls_then_summary
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY

X, Y = "x: two asks", "y: one ask"


async def test_pending_approvals_survive_a_server_kill(
    settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = by_marker(
        {
            X: calls_then_summary(
                ("call_1", "run_shell", {"command": "echo x1 >> x.log"}),
                ("call_2", "run_shell", {"command": "echo x2 >> x.log"}),
            ),
            Y: calls_then_summary(("call_1", "write_file", {"path": "y.txt", "content": "y"})),
        }
    )
    db = settings.approvals_db
    server = DevServer(tmp_path / "temporal.db", tmp_path / "server.log").start()
    try:
        client = await server.client(settings)
        with worker_process(settings, client, tmp_path / "worker.log") as worker:
            ids = {m: await start_conversation(client, settings, m) for m in (X, Y)}
            x_rows = sorted(await wait_pending(db, ids[X], 2), key=lambda r: r["request_id"])
            [y_row] = await wait_pending(db, ids[Y], 1)
            before = {m: await wait_turn(client, ids[m], "awaiting_approval") for m in (X, Y)}

            server.kill()
            server = DevServer(server.db_file, server.log_file, port=server.port).start()
            client = await server.client(settings)

            # The same requests wait, in Temporal and in its visibility store.
            for m in (X, Y):
                after = await wait_turn(client, ids[m], "awaiting_approval")
                assert after.pending_approvals == before[m].pending_approvals
                await projection_catches_up(client, db, ids[m])
                attributes = (await client.get_workflow_handle(ids[m]).describe()).typed_search_attributes
                assert attributes.get(TURN_STATUS_KEY) == "awaiting_approval"
                assert attributes.get(PENDING_APPROVALS_KEY) == len(after.pending_approvals)

            decisions = [
                DecisionInput(request_id=x_rows[0]["request_id"], decision="allow"),
                DecisionInput(request_id=x_rows[1]["request_id"], decision="deny"),
                DecisionInput(request_id=y_row["request_id"], decision="allow"),
            ]
            for decision in decisions:
                await send_decision(client, settings, decision)
            states = {m: await wait_turn(client, ids[m], "idle") for m in (X, Y)}
            assert worker.proc is not None and worker.proc.poll() is None, "the worker outlived the outage"
            for m in (X, Y):
                await projection_catches_up(client, db, ids[m])

        assert lines(workspace_of(settings, ids[X]) / "x.log") == ["x1"]
        assert (workspace_of(settings, ids[Y]) / "y.txt").read_text() == "y"
        assert any("denied" in text for text in tool_messages(states[X]))
        for m in (X, Y):
            assert model.assistant_messages_requested_for(m) == assistant_count(states[m])
        assert await replay_recorded(client, list(ids.values()), "server-restart") == 2
    finally:
        server.stop()
