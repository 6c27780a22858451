"""On a phone (390 x 844): the inbox and a card with a long shell command fit the screen (nothing
scrolls sideways but the arguments' own box), every decision button is a thumb's height (44 px),
and a one-time link's page is the same card: opened there, Approve runs the call."""

from __future__ import annotations

import re
from dataclasses import replace

from playwright.async_api import Locator, Page, expect
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from doors.decision_links import decision_link
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.browser_support import PHONE, Inbox, screenshot
from tests.support.helpers import approval_row, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary

THUMB = 44  # px: the smallest target a finger hits reliably
LONG_COMMAND = "echo ran >> once.txt && ls " + "/".join(["a-directory-with-a-long-name"] * 12) + " " + "x" * 300


async def fits_the_screen(page: Page) -> None:
    """No horizontal scroll of the page itself (a box that scrolls inside may)."""
    widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths[0]} px wide in a {widths[1]} px window"


async def thumb_sized(buttons: Locator) -> None:
    assert await buttons.count() > 0
    for button in await buttons.all():
        box = await button.bounding_box()
        assert box is not None and box["height"] >= THUMB, (await button.text_content(), box)


async def test_the_inbox_and_a_long_card_fit_a_phone(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": LONG_COMMAND}))
    page = await inbox.open(PHONE)
    cid = histories.track(await start_conversation(client, settings, "a long command, on a phone"))

    card = page.locator(f'#inbox-cards [data-request-id="perm_{cid}_c1"]')
    await expect(card.locator(".arguments")).to_contain_text("a-directory-with-a-long-name")
    await fits_the_screen(page)
    await thumb_sized(card.locator(".actions button"))
    arguments = await card.locator(".arguments").bounding_box()
    assert arguments is not None and arguments["x"] + arguments["width"] <= PHONE["width"]
    await screenshot(page, "inbox-phone-long-command.png")

    await page.locator(f'li.conversation[data-conversation-id="{cid}"] a').click()
    opened = page.locator(f'#conversation-approvals [data-request-id="perm_{cid}_c1"]')
    await expect(opened).to_be_visible()
    await fits_the_screen(page)
    await thumb_sized(opened.locator(".actions button"))
    assert inbox.problems == []


async def test_a_links_page_fits_a_phone_and_approve_runs_the_call(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": LONG_COMMAND}))
    cid = histories.track(await start_conversation(client, settings, "a link, on a phone"))
    request_id = f"perm_{cid}_c1"
    await wait_pending(settings.approvals_db, cid, 1)
    store = ProjectionStore(settings.approvals_db)
    try:
        url = await decision_link(replace(settings, ui_public_url=inbox.served.url), store, request_id, "alice")
    finally:
        await store.close()

    page = await inbox.tab(viewport=PHONE)
    await page.goto(url)
    card = page.locator(f'article.card[data-request-id="{request_id}"]')
    await expect(card.locator(".arguments")).to_contain_text("a-directory-with-a-long-name")
    await fits_the_screen(page)
    await thumb_sized(card.locator(".actions button"))
    await screenshot(page, "link-page-phone.png")
    assert approval_row(settings.approvals_db, request_id)["decision"] is None, "opening the page decided nothing"

    await page.fill("#reason", "fine from my phone")
    async with page.expect_navigation():  # the form posts; its answer is a page of its own, styled once loaded
        await card.locator("button[value=allow]").click()
    await expect(page.locator(".card-outcome")).to_contain_text(re.compile("Approved by alice"))
    await fits_the_screen(page)
    await wait_status(client, cid, "idle", tool_results=1)
    row = approval_row(settings.approvals_db, request_id)
    assert (row["decision"], row["decided_by"], row["reason"]) == ("allow", "alice", "fine from my phone")
    assert (workspace_of(settings, cid) / "once.txt").read_text() == "ran\n"
    assert inbox.problems == []
