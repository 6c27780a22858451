"""New rules reach running conversations: waiting requests are judged again (one a new deny rule
covers is denied and never runs, one a new allow rule covers runs), both with door `policy`, and
the next call is judged under the new rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from doors.control import send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import pending_rows, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, run_each_message
from worker import build_worker

BEFORE = 'allow = ["read_file", "list_dir"]\n'
AFTER = 'allow = ["read_file", "list_dir", "run_shell(touch allowed*)"]\ndeny = ["run_shell(touch denied*)"]\n'


async def test_a_reload_rejudges_waiting_requests_and_the_next_calls(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = run_each_message
    policy = tmp_path / "policy.toml"
    policy.write_text(BEFORE)
    settings = replace(settings, policy_file=str(policy))
    db = settings.approvals_db
    async with build_worker(client, settings):
        denied = histories.track(await start_conversation(client, settings, "run touch denied.txt"))
        allowed = histories.track(await start_conversation(client, settings, "run touch allowed.txt"))
        other = histories.track(await start_conversation(client, settings, "run touch other.txt"))
        for conversation in (denied, allowed, other):
            await wait_pending(db, conversation, 1)

        policy.write_text('allow = ["run_shell(touch allowed*)"')  # not TOML: refused, nothing sent
        refused = await run_cli(settings, client, "rules", "reload")
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert len(pending_rows(db, denied)) == 1

        policy.write_text(AFTER)
        reloaded = await run_cli(settings, client, "rules", "reload")
        assert reloaded.returncode == 0, reloaded.stderr
        assert "sent to 3 open conversation(s)" in reloaded.stdout

        state = await wait_status(client, denied, "idle", tool_results=1)
        assert tool_messages(state)[0].startswith("Not run: policy denied"), tool_messages(state)
        await wait_status(client, allowed, "idle", tool_results=1)
        assert len(pending_rows(db, other)) == 1, "a call the new rules do not decide keeps waiting"

        await send_message(client, denied, "run touch denied-again.txt")  # judged under the new rules
        again = await wait_status(client, denied, "idle", tool_results=2)
        assert "deny rule" in tool_messages(again)[1]
    assert (workspace_of(settings, allowed) / "allowed.txt").exists()
    assert not (workspace_of(settings, denied) / "denied.txt").exists()
    decided = rows(db, "SELECT request_id, decision, decided_by FROM ui_pending_approvals WHERE decided_by = 'policy'")
    assert sorted(row["decision"] for row in decided) == ["allow", "deny"]
    vias = rows(db, "SELECT decided_via FROM ui_decision_facts WHERE request_id = ?", decided[0]["request_id"])
    assert vias == [{"decided_via": "policy"}]
