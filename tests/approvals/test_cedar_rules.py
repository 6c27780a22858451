"""Cedar policies beside the TOML rules: a `forbid` denies whatever else allows (auto-approve and
an allow rule included), a `permit` allows a call no TOML rule matched, and an ask rule still
outranks a permit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.errors import ConfigError
from config.policy_file import read_policy_file
from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import pending_rows, tool_messages, wait_pending, wait_status
from tests.support.scripts import ScriptedModel, run_each_message
from worker import build_worker

CEDAR = """
forbid(principal, action == Action::"run_shell", resource) when { context.command like "*rm -rf*" };
permit(principal, action == Action::"run_shell", resource) when { context.command like "git status*" };
permit(principal, action == Action::"run_shell", resource) when { context.command like "git push*" };
"""
POLICY = """
allow = ["read_file", "list_dir", "run_shell(rm -rf build*)"]
ask = ["run_shell(git push*)"]

[cedar]
policies = "rules.cedar"
"""


def test_a_cedar_file_that_does_not_parse_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "rules.cedar").write_text("permit(principal, action, resource")
    (tmp_path / "policy.toml").write_text(POLICY)
    with pytest.raises(ConfigError, match=r"\[cedar\] policies .*rules.cedar do not parse") as raised:
        _ = read_policy_file(str(tmp_path / "policy.toml")).rules
    assert "\n" not in str(raised.value)


async def test_forbid_denies_permit_allows_and_an_ask_rule_still_asks(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = run_each_message
    (tmp_path / "rules.cedar").write_text(CEDAR)
    (tmp_path / "policy.toml").write_text(POLICY)
    settings = replace(settings, policy_file=str(tmp_path / "policy.toml"))
    db = settings.approvals_db
    async with build_worker(client, settings):
        forbidden = histories.track(await start_conversation(client, settings, "run rm -rf build"))
        state = await wait_status(client, forbidden, "idle", tool_results=1)
        assert "a deny rule of the policy forbids" in tool_messages(state)[0], "a forbid beats the TOML allow"
        permitted = histories.track(await start_conversation(client, settings, "run git status -s"))
        await wait_status(client, permitted, "idle", tool_results=1)
        assert pending_rows(db, permitted) == []
        asked = histories.track(await start_conversation(client, settings, "run git push origin main"))
        await wait_pending(db, asked, 1)  # the ask rule outranks the permit
        unmatched = histories.track(await start_conversation(client, settings, "run make"))
        await wait_pending(db, unmatched, 1)  # neither: asked
