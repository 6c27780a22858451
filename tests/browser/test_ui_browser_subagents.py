"""Chromium: a subagent's request in the inbox says whom it works for; the list shows the tree."""

from __future__ import annotations

import re

from playwright.async_api import expect
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, dot, screenshot
from tests.support.helpers import workspace_of
from tests.support.scripts import ScriptedModel, delegation
from workflows.delegation import child_conversation_id

TASK = "write the report to report.txt"


async def test_the_childs_card_names_its_parent_and_the_child_sits_under_it(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "from the child"}))
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
    child = histories.track(child_conversation_id(cid, "d1"))

    card = page.locator(f'#inbox-cards [data-request-id="perm_{child}_w1"]')
    await expect(card.locator(".card-conversation")).to_have_text(f"Subagent conversation {child}, working for {cid}")
    await expect(card.locator(".card-parent")).to_have_attribute("href", re.compile(re.escape(cid) + "$"))
    items = page.locator("li.conversation")
    ids = await items.evaluate_all("nodes => nodes.map(n => n.dataset.conversationId)")
    assert ids.index(child) == ids.index(cid) + 1, ids
    subagent = page.locator(f'li.conversation[data-conversation-id="{child}"]')
    await expect(subagent).to_have_attribute("data-parent-id", cid)
    await expect(subagent.locator(".subagent-of")).to_have_text(f" · subagent of {cid}")
    await screenshot(page, "subagent-card.png")

    await card.locator(".button-allow").click()
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    assert (workspace_of(settings, cid) / "report.txt").read_text() == "from the child"
    assert inbox.problems == []
