"""Shadow rules: `[shadow] policy = "NEW.toml"` is judged beside the live rules on every call; where
the two differ it is recorded (`rules shadow`), and only the live rules decide."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import tool_messages, wait_pending, wait_status
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, run_each_message
from worker import build_worker

LIVE = 'allow = ["read_file", "list_dir", "run_shell(echo *)"]\n\n[shadow]\npolicy = "new.toml"\n'
NEW = 'allow = ["read_file", "list_dir", "run_shell(ls*)"]\ndeny = ["run_shell(echo secret*)"]\n'


async def test_shadow_rules_record_where_they_differ_and_decide_nothing(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = run_each_message
    (tmp_path / "new.toml").write_text(NEW)
    live = tmp_path / "policy.toml"
    live.write_text(LIVE)
    settings = replace(settings, policy_file=str(live))
    async with build_worker(client, settings):
        ran = histories.track(await start_conversation(client, settings, "run echo secret"))
        state = await wait_status(client, ran, "idle", tool_results=1)
        assert "secret" in tool_messages(state)[0], "the live rules allowed it; the shadow's deny changed nothing"
        asked = histories.track(await start_conversation(client, settings, "run ls -la"))
        await wait_pending(settings.approvals_db, asked, 1)  # the shadow would allow it; the live rules ask
        same = histories.track(await start_conversation(client, settings, "run pwd"))
        await wait_pending(settings.approvals_db, same, 1)  # asked by both: nothing recorded

    listed = await run_cli(settings, client, "rules", "shadow", "--json")
    assert listed.returncode == 0, listed.stderr
    found = {(row["conversation_id"], row["live"], row["shadow"]) for row in json.loads(listed.stdout)}
    assert found == {(ran, "allow", "deny"), (asked, "ask", "allow")}
    text = await run_cli(settings, client, "rules", "shadow")
    assert "run_shell(echo secret)" in text.stdout and "deny" in text.stdout
