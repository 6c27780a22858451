"""The card's "and allow calls like this" in real Chromium: the narrowest rule is prefilled and the
wider steps are listed; the person widens it knowingly, approves with it for this conversation and
an hour, and the other waiting call it covers is approved by the grant while a call it does not
cover still waits. A rule made from text with hidden characters is shown escaped."""

from __future__ import annotations

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.browser_support import screenshot, serve_inbox
from tests.support.helpers import approval_row, eventually, start_and_wait
from tests.support.scripts import ScriptedModel, calls_then_summary


async def test_the_card_offers_a_grant_that_approves_what_else_waits_like_it(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
) -> None:
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "echo a"}),
        ("c2", "run_shell", {"command": "echo b"}),
        ("c3", "run_shell", {"command": "ls \u202ecba"}),
    )
    async with serve_inbox(browser, env, settings, client) as inbox:
        started = await start_and_wait(client, settings, "echo", histories, pending=3)
        c1, c2, c3 = (f"perm_{started.conversation_id}_{call}" for call in ("c1", "c2", "c3"))
        page = await inbox.tab()
        await page.goto(inbox.served.url)
        card = page.locator(f'#inbox-cards [data-request-id="{c1}"]')
        await expect(card.locator(".grant-fields")).to_be_hidden()
        await card.locator(".grant-toggle").check()
        pattern = card.locator(".grant-pattern")
        await expect(pattern).to_have_value("run_shell(echo a*)")
        await expect(card.locator(".grant-wider")).to_contain_text("run_shell(echo *) → run_shell")

        hidden = page.locator(f'#inbox-cards [data-request-id="{c3}"]')
        await hidden.locator(".grant-toggle").check()
        await expect(hidden.locator(".grant-escaped")).to_contain_text("\\u202e")

        await pattern.fill("run_shell(echo *)")
        await card.locator(".grant-scope").select_option("conversation")
        await card.locator(".grant-for").select_option("3600")
        await screenshot(page, "inbox-grant-offer.png")
        await card.locator(".button-allow").click()
        await expect(page.locator("#toast")).to_contain_text("granted run_shell(echo *)")

        async def both_decided() -> bool:
            return all(approval_row(settings.approvals_db, r)["resolved_at"] for r in (c1, c2))

        await eventually(both_decided, timeout=15)
        await expect(page.locator(f'#inbox-cards [data-request-id="{c2}"]')).to_have_count(0)
        await expect(page.locator(f'#inbox-cards [data-request-id="{c3}"]')).to_have_count(1)

    granted = approval_row(settings.approvals_db, c2)
    assert (granted["decision"], granted["decided_by"]) == ("allow", "web")
    assert granted["reason"].endswith(": run_shell(echo *)")
    assert approval_row(settings.approvals_db, c3)["resolved_at"] is None
