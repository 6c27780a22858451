"""A rebuild from Temporal's history keeps what each decision recorded: who decided, through which
door, with which groups and hash, and for an edit both the proposed and the edited arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from maintenance.rebuild import rebuild_projection
from tests.conftest import HistoryRecorder
from tests.storage.test_projection_rebuild import lose
from tests.support.helpers import rows, wait_pending, wait_status
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

DECISION_ROWS = """SELECT a.request_id, a.conversation_id, a.turn_id, a.tool_call_id, a.tool_name,
    a.permission_type, a.details_json, a.created_at, a.expires_at, a.resolved_at, a.decision,
    a.decided_by, a.reason, a.kv_snapshot_json, a.edited_arguments_json, f.decided_via, f.decided_args_hash,
    f.decided_groups_json
  FROM ui_pending_approvals a LEFT JOIN ui_decision_facts f ON f.request_id = a.request_id
  WHERE a.conversation_id = ? ORDER BY a.request_id"""


def decision_rows(db: Path, conversation_id: str) -> list[dict[str, Any]]:
    return rows(db, DECISION_ROWS, conversation_id)


async def test_a_rebuild_keeps_edited_arguments_and_the_door_of_each_decision(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    db = settings.approvals_db
    assert isinstance(db, Path), "this test loses and restores a SQLite file"
    model.behaviour = calls_then_summary(
        ("c1", "write_file", {"path": "proposed.txt", "content": "as proposed"}),
        ("c2", "write_file", {"path": "plain.txt", "content": "approved as is"}),
        ("c3", "write_file", {"path": "no.txt", "content": "denied"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "three writes"))
        await wait_pending(db, cid, 3)
        edited = await run_cli(settings, client, "edit", f"perm_{cid}_c1", "--set", "path=edited.txt", "--as", "bob")
        approved = await run_cli(settings, client, "approve", f"perm_{cid}_c2", "--as", "carol")
        denied = await run_cli(settings, client, "deny", f"perm_{cid}_c3", "--as", "dave", "--reason", "not that")
        assert (edited.returncode, approved.returncode, denied.returncode) == (0, 0, 0), edited.stderr
        await wait_status(client, cid, "idle")
        before = decision_rows(db, cid)
        lose(db)
        await rebuild_projection(client, settings)
        after = decision_rows(db, cid)

    by_id = {row["request_id"]: row for row in before}
    edit_row = by_id[f"perm_{cid}_c1"]
    assert edit_row["decision"] == "edit" and "edited.txt" in edit_row["edited_arguments_json"]
    assert "proposed.txt" in edit_row["details_json"] and edit_row["decided_via"] == "cli"
    assert {row["decided_by"] for row in before} == {"bob", "carol", "dave"}
    assert after == before
