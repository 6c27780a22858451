"""Malformed calls become error results for the model at once; nobody is asked, the turn goes on."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import rows, tool_messages, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


async def test_bad_json_unknown_tool_and_escaping_paths_are_errors_not_requests(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("c_json", "write_file", '{"path": "x.txt", "content": '),
        ("c_tool", "format_disk", {"device": "/dev/sda"}),
        ("c_escape", "write_file", {"path": "../outside.txt", "content": "x"}),
        ("c_abs", "read_file", {"path": "/etc/passwd"}),
        ("c_missing", "run_shell", {}),
        ("c_list", "write_file", "[1, 2]"),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "misbehave"))
        state = await wait_status(client, cid, "idle")

    results = dict(zip([m.tool_call_id for m in state.messages if m.role == "tool"], tool_messages(state), strict=True))
    assert "not valid JSON" in results["c_json"]
    assert "unknown tool 'format_disk'" in results["c_tool"]
    assert "outside the workspace" in results["c_escape"]
    assert "outside the workspace" in results["c_abs"]
    assert "missing required argument(s): command" in results["c_missing"]
    assert "must be a JSON object" in results["c_list"]
    assert rows(settings.approvals_db, "SELECT * FROM ui_pending_approvals") == []
    assert not (settings.workspace_dir.parent / "outside.txt").exists()
    assert state.messages[-1].content is not None and state.messages[-1].content.startswith("results: Error")
    assert len(model.requests) == 2
