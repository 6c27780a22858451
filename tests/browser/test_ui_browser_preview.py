"""Previews in real Chromium: a write over a file shows its diff and the reason the agent gave,
escaped; a file changed after the asking makes the approval stale (the API refuses it with 409),
the call is asked again with a diff against the new content, and nothing wrote over the change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from tests.conftest import HistoryRecorder
from tests.support.browser_support import screenshot, serve_inbox
from tests.support.helpers import approval_row, eventually, new_workspace, start_and_wait, wait_status
from tests.support.scripts import ScriptedModel, last_role

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


OLD_BYTES = "première\r\nsans fin".encode()


def rewrite(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "user":
        return tool_reply(("c1", "write_file", {"path": "doc.txt", "content": "rewritten\n"}))
    return text_reply("done")


async def test_undo_on_the_decided_card_is_asked_restores_the_bytes_and_refuses_after_a_change(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
) -> None:
    model.behaviour = rewrite
    cid, ws = new_workspace(settings)
    target = ws / "doc.txt"
    target.write_bytes(OLD_BYTES)
    async with serve_inbox(browser, env, settings, client) as inbox:
        started = await start_and_wait(client, settings, "rewrite doc.txt", histories, conversation_id=cid, pending=1)
        write_id = started.pending[0]["request_id"]
        page = await inbox.open()
        await page.locator(f'#inbox-cards [data-request-id="{write_id}"] .button-allow').click()
        await wait_status(client, cid, "idle")
        assert target.read_text() == "rewritten\n"

        await page.goto(f"{inbox.served.url}/#/conversations/{cid}")
        await page.locator("#decided-approvals summary").click()
        decided = page.locator(f'#decided-cards [data-request-id="{write_id}"]')
        await decided.locator(".button-undo").click()
        undo_id = f"perm_{cid}_undo-c1"
        await expect(page.locator(".undo-asked")).to_contain_text(undo_id)
        await page.goto(inbox.served.url + "/")
        undo_card = page.locator(f'#inbox-cards [data-request-id="{undo_id}"]')
        await expect(undo_card.locator(".diff-removed")).to_have_text(["-rewritten"])
        assert target.read_text() == "rewritten\n", "the undo waits for its approval"
        await undo_card.locator(".button-allow").click()
        await eventually(lambda: _restored(target))
        assert approval_row(settings.approvals_db, undo_id)["decision"] == "allow"

        target.write_text("a later edit\n")
        await page.goto(f"{inbox.served.url}/#/conversations/{cid}")
        await page.locator("#decided-approvals summary").click()
        await page.locator(f'#decided-cards [data-request-id="{write_id}"] .button-undo').click()
        await expect(page.locator(".undo-refused")).to_contain_text("changed since")
        await expect(page.locator(".undo-three-way")).to_contain_text("+a later edit")
        await screenshot(page, "conversation-undo-refused.png")
        assert [p for p in inbox.problems if "status of 409" not in p] == []
    assert target.read_text() == "a later edit\n"


async def _restored(target: Path) -> bool:
    return target.read_bytes() == OLD_BYTES
