"""The audit trail: every request with who decided it, through which door, on which arguments hash,
and what became of the call, the same through `starter.py audit` and `GET /api/audit`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_APPROVAL_DECISION
from core.conversation_model import DecisionInput, arguments_hash
from doors.control import start_conversation
from storage.audit import parse_since
from tests.conftest import HistoryRecorder
from tests.support.helpers import new_workspace, wait_pending, wait_status, workspace_of
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import api_client
from worker import build_worker

OK = {"path": "ok.txt", "content": "fine"}
INTO_A_DIRECTORY = {"path": "adir", "content": "cannot"}
SHELL = {"command": "echo never"}


def test_since_takes_durations_and_iso_times() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert parse_since("90m", now) == (now - timedelta(minutes=90)).isoformat()
    assert parse_since("7d", now) == (now - timedelta(days=7)).isoformat()
    assert parse_since("2026-11-30T10:00:00") == "2026-11-30T10:00:00+00:00"
    assert parse_since("2026-11-30T10:00:00+01:00") == "2026-11-30T09:00:00+00:00"
    for bad in ("soon", "7w", "-1h", ""):
        try:
            parse_since(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was accepted")


@on_both_backends
async def test_every_request_with_who_which_door_which_hash_and_the_outcome(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    planned, ws = new_workspace(settings)
    (ws / "adir").mkdir()
    model.behaviour = calls_then_summary(
        ("c1", "write_file", OK), ("c2", "write_file", INTO_A_DIRECTORY), ("c3", "run_shell", SHELL)
    )
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "three calls", planned))
        ok, into_dir, shell = (f"perm_{cid}_{call}" for call in ("c1", "c2", "c3"))
        await wait_pending(settings.approvals_db, cid, 3)
        approved = await run_cli(settings, client, "approve", ok, "--as", "carol")
        assert approved.returncode == 0, approved.stderr
        card = (await http.get(f"/api/approvals/{into_dir}")).json()
        body = {"decision": "allow", "name": "dave", "args_hash": card["args_hash"]}  # as the page sends it
        via_ui = await http.post(f"/api/approvals/{into_dir}/decision", json=body)
        assert via_ui.status_code == 200
        raw = DecisionInput(request_id=shell, decision="deny", reason="not today", decided_by="erin")
        await client.get_workflow_handle(cid).signal(SIGNAL_APPROVAL_DECISION, raw)
        await wait_status(client, cid, "idle")

        listed = await run_cli(settings, client, "audit", "--json")
        table = await run_cli(settings, client, "audit", "--since", "1h")
        future = await run_cli(settings, client, "audit", "--since", "2099-01-01")
        bad = await run_cli(settings, client, "audit", "--since", "soon")
        api_rows = (await http.get("/api/audit")).json()
        api_future = (await http.get("/api/audit", params={"since": "2099-01-01"})).json()
        api_bad = await http.get("/api/audit", params={"since": "soon"})

    assert listed.returncode == 0, listed.stderr
    rows = {row["request_id"]: row for row in json.loads(listed.stdout)}
    facts = {
        rid: (row["decision"], row["decided_by"], row["decided_via"], row["decided_args_hash"], row["outcome"])
        for rid, row in rows.items()
    }
    assert facts == {
        ok: ("allow", "carol", "cli", arguments_hash(OK), "ran"),
        into_dir: ("allow", "dave", "ui", arguments_hash(INTO_A_DIRECTORY), "failed"),
        shell: ("deny", "erin", "signal", None, "not run"),
    }
    assert rows[ok]["arguments"] == OK and rows[ok]["args_hash"] == arguments_hash(OK)
    assert rows[shell]["reason"] == "not today"
    assert all(row["created_at"] and row["resolved_at"] for row in rows.values())
    assert (workspace_of(settings, cid) / "ok.txt").read_text() == "fine"

    assert table.returncode == 0 and all(rid in table.stdout for rid in rows)
    assert "carol" in table.stdout and "failed" in table.stdout and "not run" in table.stdout
    assert future.returncode == 0 and future.stdout.startswith("No approval request since 2099-01-01")
    assert bad.returncode == 2 and "--since" in one_line(bad.stderr)
    assert {row["request_id"]: row for row in api_rows} == rows
    assert api_future == [] and api_bad.status_code == 422
