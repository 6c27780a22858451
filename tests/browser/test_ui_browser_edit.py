"""Edit before approving in real Chromium: the card's arguments are changed to another write_file
path, the file appears at the edited path only, and the transcript shows the model was told."""

from __future__ import annotations

import json

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.browser_support import screenshot, serve_inbox
from tests.support.helpers import approval_row, rows, start_and_wait, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary

ARGS = {"path": "notes.txt", "content": "from the model"}


async def test_an_edit_in_the_card_writes_the_edited_path_only_and_the_model_is_told(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
) -> None:
    model.behaviour = calls_then_summary(("c1", "write_file", ARGS))
    async with serve_inbox(browser, env, settings, client) as inbox:
        started = await start_and_wait(client, settings, "write the notes", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        request_id = row["request_id"]
        page = await inbox.tab()
        await page.goto(inbox.served.url)
        card = page.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await card.locator(".edit-summary").click()
        area = card.locator(".edit-arguments")
        assert json.loads(await area.input_value()) == ARGS, "the box starts with the call's own arguments"

        await area.fill("{not json")
        await card.locator(".button-edit").click()
        await expect(card.locator(".edit-problem")).to_have_text("The arguments must be one JSON object.")
        assert rows(settings.approvals_db, "SELECT * FROM ui_decision_claims") == []

        await area.fill(json.dumps({"path": "reviewed/notes.txt", "content": "from the model"}))
        await card.locator(".reason").fill("notes go under reviewed/")
        await screenshot(page, "inbox-edit-before-approving.png")
        await card.locator(".button-edit").click()
        await wait_status(client, cid, "idle")
        await expect(page.locator("#inbox-empty")).to_be_visible()

        await page.goto(f"{inbox.served.url}/#/conversations/{cid}")
        transcript = page.locator("#transcript")
        await expect(transcript).to_contain_text("changed the arguments of this write_file call")
        await expect(transcript).to_contain_text('path: "notes.txt" → "reviewed/notes.txt"')
        await page.locator("#decided-approvals summary").click()
        decided = page.locator(f'#decided-cards [data-request-id="{request_id}"]')
        await expect(decided.locator(".card-edited")).to_have_text("Ran with these edited arguments:")
        await expect(decided.locator(".card-outcome")).to_contain_text("Approved with edited arguments")
        await screenshot(page, "conversation-edited-call.png")

    assert (workspace_of(settings, cid) / "reviewed/notes.txt").read_text() == "from the model"
    assert [p.name for p in workspace_of(settings, cid).rglob("*") if p.is_file()] == ["notes.txt"]
    resolved = approval_row(settings.approvals_db, request_id)
    assert (resolved["decision"], resolved["execution_state"]) == ("edit", "done")
    assert json.loads(resolved["edited_arguments_json"]) == {"path": "reviewed/notes.txt", "content": "from the model"}
    told = model.reply_requests[-1]["messages"][-1]["content"]
    assert "reviewed/notes.txt" in told and "Reason: notes go under reviewed/" in told
