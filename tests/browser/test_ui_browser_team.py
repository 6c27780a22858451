"""The inbox's team controls in real Chromium: the arguments hash on each card, a batch decision
that lists every call it covers, the audit table, and the close and auto-approve controls."""

from __future__ import annotations

from playwright.async_api import expect
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ConversationState, arguments_hash
from doors.control import get_state, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, screenshot
from tests.support.helpers import approval_row, eventually, start_and_wait, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary

CALLS = [(f"c_{n}", "write_file", {"path": f"{n}.txt", "content": n}) for n in ("a", "b", "c")]


async def test_batch_allow_lists_its_calls_and_the_audit_table_shows_each_decision(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(*CALLS)
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "three writes"))
    a, b, c = (f"perm_{cid}_{call_id}" for call_id, _, _ in CALLS)
    cards = {rid: page.locator(f'#inbox-cards [data-request-id="{rid}"]') for rid in (a, b, c)}
    for (_, _, arguments), rid in zip(CALLS, (a, b, c), strict=True):
        await expect(cards[rid].locator(".args-hash")).to_have_text(arguments_hash(arguments))

    await cards[a].locator(".batch-select").check()
    await cards[b].locator(".batch-select").check()
    await expect(page.locator("#batch-count")).to_have_text("2 calls selected")
    covered = page.locator("#batch-calls li")
    await expect(covered).to_have_count(2)
    await expect(covered.nth(0)).to_contain_text('write_file {"content":"a","path":"a.txt"}')
    await expect(covered.nth(0)).to_contain_text(arguments_hash(CALLS[0][2]))
    await expect(covered.nth(1)).to_contain_text('"b.txt"')
    await screenshot(page, "inbox-batch.png")
    await page.click("#batch-allow")
    await expect(page.locator("#batch-calls li.batch-sent")).to_have_count(2)

    await cards[c].locator("button[data-decision=deny]").click()
    await wait_status(client, cid, "idle")
    await page.locator("#audit summary").click()
    audit_rows = page.locator("#audit-rows tr.audit-row")
    await expect(audit_rows).to_have_count(3)
    await expect(page.locator(f'#audit-rows tr[data-request-id="{a}"] .audit-outcome')).to_have_text("ran")
    await expect(page.locator(f'#audit-rows tr[data-request-id="{c}"] .audit-outcome')).to_have_text("not run")
    await expect(page.locator(f'#audit-rows tr[data-request-id="{b}"] .audit-via')).to_have_text("ui")
    await screenshot(page, "inbox-audit.png")

    assert [approval_row(settings.approvals_db, rid)["decision"] for rid in (a, b, c)] == ["allow", "allow", "deny"]
    assert (workspace_of(settings, cid) / "a.txt").read_text() == "a"
    assert (workspace_of(settings, cid) / "b.txt").read_text() == "b"
    assert not (workspace_of(settings, cid) / "c.txt").exists()
    assert inbox.problems == []


async def test_auto_approve_switch_and_close_button(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(CALLS[0])
    started = await start_and_wait(client, settings, "one write", histories, pending=1)
    cid, [row] = started.conversation_id, started.pending
    page = await inbox.open()
    await page.goto(f"{inbox.served.url}/#/conversations/{cid}")
    toggle = page.locator("#auto-approve-toggle")
    await expect(toggle).to_be_enabled()
    await expect(toggle).not_to_be_checked()
    await toggle.check()

    async def switched() -> bool:
        return (await get_state(client, cid)).auto_approve

    await eventually(switched)
    close = page.locator("#close-button")
    await close.click()
    await expect(close).to_contain_text("Click again")
    assert (await get_state(client, cid)).turn_status != "closed", "one click only arms the button"
    await close.click()
    final = await client.get_workflow_handle(cid, result_type=ConversationState).result()
    await expect(page.locator("#conversation-controls")).to_be_hidden()

    assert final.turn_status == "closed"
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "canceled"
    assert not (workspace_of(settings, cid) / "a.txt").exists()
    assert inbox.problems == []
