"""Previews in real Chromium: a write over a file shows its diff and the reason the agent gave,
escaped; a file changed after the asking makes the approval stale (the API refuses it with 409),
the call is asked again with a diff against the new content, and nothing wrote over the change."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from tests.browser_support import screenshot, serve_inbox
from tests.conftest import HistoryRecorder
from tests.helpers import approval_row, new_workspace, start_and_wait, wait_status
from tests.scripts import ScriptedModel, last_role

OLD = "alpha\nbeta\ngamma\n"
NEW = "alpha\nBETA <b>bold</b>\ngamma\n"
SAID = "I will capitalise <i>beta</i>, as you asked."


def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "user":
        return tool_reply(("c1", "write_file", {"path": "notes.txt", "content": NEW}), text=SAID)
    return text_reply("done")


async def test_the_card_shows_the_diff_and_the_reason_and_a_stale_approval_is_asked_again(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
) -> None:
    model.behaviour = behave
    cid, ws = new_workspace(settings)
    target = ws / "notes.txt"
    target.write_text(OLD)
    async with serve_inbox(browser, env, settings, client) as inbox:
        started = await start_and_wait(
            client, settings, "capitalise <beta> please", histories, conversation_id=cid, pending=1
        )
        first = started.pending[0]["request_id"]
        page = await inbox.open()
        card = page.locator(f'#inbox-cards [data-request-id="{first}"]')
        await expect(card.locator(".diff-removed")).to_have_text(["-beta"])
        await expect(card.locator(".diff-added")).to_have_text(["+BETA <b>bold</b>"])
        await expect(card.locator(".why-user .why-text")).to_have_text("capitalise <beta> please")
        await expect(card.locator(".why-assistant .why-text")).to_have_text(SAID)
        assert await card.locator(".card-preview b, .card-why i, .card-why beta").count() == 0, "text became HTML"
        await screenshot(page, "inbox-preview-diff.png")

        target.write_text("edited by a person\n")
        await card.locator(".button-allow").click()
        again_id = f"perm_{cid}_c1-again2"
        again = page.locator(f'#inbox-cards [data-request-id="{again_id}"]')
        await expect(again.locator(".preview-changed")).to_contain_text("changed after the call was asked")
        await expect(again.locator(".diff-removed")).to_have_text(["-edited by a person"])
        assert target.read_text() == "edited by a person\n"
        assert approval_row(settings.approvals_db, first)["decision"] == "stale"
        status = await page.evaluate(
            """async (id) => (await fetch(`/api/approvals/${encodeURIComponent(id)}/decision`, {
                method: "POST", headers: {"Content-Type": "application/json"},
                body: JSON.stringify({decision: "allow"})})).status""",
            first,
        )
        assert status == 409
        await screenshot(page, "inbox-preview-asked-again.png")

        await again.locator(".button-allow").click()
        await wait_status(client, cid, "idle")
        assert [p for p in inbox.problems if "status of 409" not in p] == []  # the refusal we asked for
    assert target.read_text() == NEW
