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
from doors.control import start_conversation
from tests.browser import test_ui_browser
from tests.browser.test_ui_browser import screenshot
from tests.browser.test_ui_browser_people import POLICY, _log_in
from tests.conftest import HistoryRecorder
from tests.helpers import approval_row, wait_pending, workspace_of
from tests.scripts import ScriptedModel, calls_then_summary
from tests.ui_fixtures import add_person, served_app
from worker import build_worker

browser = test_ui_browser.browser  # the shared Chromium fixture


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
    async with build_worker(client, guarded):
        served = served_app(guarded, env.client.service_client.config.target_host)
        try:
            cid = histories.track(await start_conversation(client, guarded, "deploy"))
            [row] = await wait_pending(guarded.approvals_db, cid, 1)
            request_id, before = row["request_id"], row["expires_at"]
            shown = f'time[datetime="{before}"]'

            outsider = await _log_in(browser, served.url, olly)
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

            approver = await _log_in(browser, served.url, sam)
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
        finally:
            served.stop()

    assert datetime.fromisoformat(after) - datetime.fromisoformat(before) == timedelta(days=1)
    extended = approval_row(guarded.approvals_db, request_id)
    assert extended["decision"] is None
    [recorded] = json.loads(extended["details_json"])["extensions"]
    assert (recorded["by"], recorded["seconds"]) == ("sam", 86400)
    assert not (workspace_of(guarded, cid) / "ran.txt").exists()
