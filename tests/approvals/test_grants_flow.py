"""Grants against a real workflow, from the command line: a new grant approves at once the waiting
call it covers (door `grant`, decided by its maker, the reason naming it) while another waits;
`approve --grant` approves a call and makes the grant from it (a pattern that misses the call is
exit 2); `approve --always` is kept as a grant, and revoking it makes the conversation forget it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from temporalio.client import Client

from config.settings import Settings
from doors.control import get_state
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import Db, approval_row, eventually, start_and_wait, wait_status, workspace_of
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


async def test_a_grant_approves_the_waiting_call_it_covers_and_approve_grant_makes_one(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "ls -la"}),
        ("c2", "run_shell", {"command": "echo two > two.txt"}),
    )
    db = settings.approvals_db
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "look", histories, pending=2)
        cid = started.conversation_id
        c1, c2 = (f"perm_{cid}_{call}" for call in ("c1", "c2"))

        added = await run_cli(
            settings, client, "grants", "add", "run_shell(ls *)", "--conversation", cid, "--as", "ann"
        )
        assert added.returncode == 0, added.stderr
        assert f"Approved 1 waiting call(s) it covers: {c1}" in added.stdout
        grant_id = added.stdout.split("Granted ")[1].split(":")[0]
        await eventually(lambda: _resolved(db, c1), timeout=10)
        store = ProjectionStore(db)
        try:
            row = await store.approval(c1)
            assert row is not None
            assert (row["decision"], row["decided_by"], row["decided_via"]) == ("allow", "ann", "grant")
            assert row["reason"] == f"grant {grant_id}: run_shell(ls *)"
            assert approval_row(db, c2)["resolved_at"] is None, "a call the grant does not cover still waits"

            missed = await run_cli(settings, client, "approve", c2, "--grant", "run_shell(ls *)", "--as", "ann")
            assert missed.returncode == 2 and "does not cover" in missed.stderr
            assert approval_row(db, c2)["resolved_at"] is None
            before = datetime.now(UTC)
            approved = await run_cli(
                settings, client, "approve", c2, "--grant", "run_shell(echo *)", "--for", "1h", "--everywhere",
                "--as", "ann",
            )  # fmt: skip
            assert approved.returncode == 0, approved.stderr
            assert "Approved: run_shell" in approved.stdout and "run_shell(echo *) everywhere" in approved.stdout
            await wait_status(client, cid, "idle")

            listed = await run_cli(settings, client, "grants", "list", "--json")
            by_pattern = {g["pattern"]: g for g in json.loads(listed.stdout)}
            echo = by_pattern["run_shell(echo *)"]
            assert (echo["scope"], echo["conversation_id"], echo["from_request"]) == ("everywhere", None, c2)
            expires = datetime.fromisoformat(echo["expires_at"])
            assert before + timedelta(hours=1) <= expires <= datetime.now(UTC) + timedelta(hours=1)
            assert by_pattern["run_shell(ls *)"]["conversation_id"] == cid
            assert (await store.approval(c2) or {})["decided_via"] == "cli"
        finally:
            await store.close()
    assert (workspace_of(settings, cid) / "two.txt").read_text() == "two\n"


async def test_always_allow_is_kept_as_a_grant_and_revoking_it_forgets_it(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo one > one.txt"}))
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "write", histories, pending=1)
        cid = started.conversation_id
        approved = await run_cli(settings, client, "approve", f"perm_{cid}_c1", "--always", "--as", "ann")
        assert approved.returncode == 0, approved.stderr
        assert "kept as grant gr_" in approved.stdout
        state = await wait_status(client, cid, "idle")
        assert state.always_allow == ["run_shell"]

        [kept] = json.loads((await run_cli(settings, client, "grants", "list", "--json")).stdout)
        assert (kept["pattern"], kept["scope"], kept["conversation_id"]) == ("run_shell", "conversation", cid)
        assert (kept["door"], kept["made_by"], kept["expires_at"]) == ("always", "ann", None)

        revoked = await run_cli(settings, client, "grants", "revoke", kept["grant_id"], "--as", "bob")
        assert revoked.returncode == 0, revoked.stderr

        async def forgotten() -> bool:
            return (await get_state(client, cid)).always_allow == []

        await eventually(forgotten, timeout=10)
        assert json.loads((await run_cli(settings, client, "grants", "list", "--json")).stdout) == []


async def _resolved(db: Db, request_id: str) -> bool:
    return approval_row(db, request_id)["resolved_at"] is not None
