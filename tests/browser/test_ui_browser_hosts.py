"""The inbox in real Chromium says when a conversation's tool waits for a host no worker polls:
a badge beside its status in the list, the line in its entry, and the line in its view."""

from __future__ import annotations

from playwright.async_api import Browser, expect

from config.settings import Settings
from tests.storage.test_hosts import one_waiting_one_fine
from tests.support.ui_fixtures import served_app

LINE = "waiting for host pod-a: no worker since 10:02:03; moving at 10:04:03"


async def test_the_inbox_says_which_host_a_conversation_waits_for(browser: Browser, settings: Settings) -> None:
    await one_waiting_one_fine(settings.approvals_db)
    served = served_app(settings, "127.0.0.1:1")  # the projection alone: no Temporal needed
    page = await browser.new_page()
    try:
        await page.goto(served.url)
        waits = page.locator('li.conversation[data-conversation-id="conv-waits"]')
        await expect(waits.locator(".host-wait-badge")).to_have_text("host gone")
        await expect(waits.locator(".host-wait-note")).to_contain_text(LINE)
        fine = page.locator('li.conversation[data-conversation-id="conv-fine"]')
        await expect(fine).to_be_visible()
        await expect(fine.locator(".host-wait-badge")).to_have_count(0)
        await waits.locator("a.conversation-link").click()
        await expect(page.locator("#conversation-host-wait")).to_have_text(LINE)
        await page.locator('li.conversation[data-conversation-id="conv-fine"] a.conversation-link').click()
        await expect(page.locator("#conversation-host-wait")).to_be_hidden()
    finally:
        await page.close()
        served.stop()
