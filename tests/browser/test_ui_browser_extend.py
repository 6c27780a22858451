"""Extend from the card in real Chromium: someone outside the approvers' group is refused on the
card and the deadline stays; an approver extends by a day, the card's expiry moves and the row's
expires_at moves by exactly that, with the extension listed on the card."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.browser.test_ui_browser_people import POLICY
from tests.conftest import HistoryRecorder
from tests.support.browser_support import screenshot, serve_inbox
from tests.support.helpers import approval_row, start_and_wait, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person


async def test_an_approver_extends_from_the_card_and_an_outsider_is_refused(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    guarded = replace(settings, ui_token="shared-token", policy_file=str(policy))
    olly, sam = await add_person(guarded, "olly", ["dev"]), await add_person(guarded, "sam", ["sre"])
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version > ran.txt"}))
    async with serve_inbox(browser, env, guarded, client) as inbox:
        started = await start_and_wait(client, guarded, "deploy", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        request_id, before = row["request_id"], row["expires_at"]
        shown = f'time[datetime="{before}"]'

        outsider = await inbox.log_in(olly)
        card = outsider.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await expect(card.locator(".card-times " + shown)).to_have_count(1)
        await card.locator(".extend-by").select_option("86400")
        await card.locator(".button-extend").click()
        problem = card.locator(".extend-problem")
        await expect(problem).to_contain_text("Not extended: ")
        await expect(problem).to_contain_text("olly")
        await screenshot(outsider, "inbox-extend-refused.png")
        refused = approval_row(guarded.approvals_db, request_id)
        assert refused["expires_at"] == before
        assert "extensions" not in json.loads(refused["details_json"])

        approver = await inbox.log_in(sam)
        card = approver.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await card.locator(".extend-by").select_option("86400")
        await card.locator(".button-extend").click()
        await expect(card.locator(".extension")).to_have_count(1)
        await expect(card.locator(".extension")).to_contain_text("Extended by sam: +1d")
        await expect(card.locator(".card-times " + shown)).to_have_count(0)
        await expect(card.locator(".extend-problem")).to_be_hidden()
        after = approval_row(guarded.approvals_db, request_id)["expires_at"]
        await expect(card.locator(f'.card-times time[datetime="{after}"]')).to_have_count(1)
        await screenshot(approver, "inbox-extended.png")

    assert datetime.fromisoformat(after) - datetime.fromisoformat(before) == timedelta(days=1)
    extended = approval_row(guarded.approvals_db, request_id)
    assert extended["decision"] is None
    [recorded] = json.loads(extended["details_json"])["extensions"]
    assert (recorded["by"], recorded["seconds"]) == ("sam", 86400)
    assert not (workspace_of(guarded, cid) / "ran.txt").exists()
