"""The inbox in real headless Chromium, against a real worker, the scripted model and uvicorn.

Skips only when no Chromium exists and REQUIRE_BROWSER is unset; CI sets REQUIRE_BROWSER=1.
Screenshots land in build/screenshots/; with UPDATE_DOCS_SCREENSHOT=1 the one with an orange dot
also replaces docs/inbox.png (the README's picture), so a plain test run changes no tracked file.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.browser_support import PHONE, Inbox, dot, screenshot, serve_inbox
from tests.support.helpers import workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary, first_user_text, last_role
from tests.support.ui_fixtures import seed_conversation, seed_pending

README_SCREENSHOT = Path("docs/inbox.png")


async def test_orange_dot_appears_live_in_two_tabs_and_allow_clears_it(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    write_notes = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello inbox"}))
    model.behaviour = lambda m: text_reply("Hello!") if first_user_text(m) == "say hello" else write_notes(m)
    greeted = histories.track(await start_conversation(client, settings, "say hello"))
    first, second = await inbox.open(), await inbox.open()
    await expect(dot(second, greeted)).to_have_class(re.compile(r"\bdot-idle\b"))

    await first.fill("#start-message", "write hello inbox to notes.txt")
    await first.click("#start-button")
    await first.wait_for_url(re.compile(r"#/conversations/.+"))
    cid = histories.track(first.url.split("#/conversations/")[1])

    for tab in (first, second):
        await expect(dot(tab, cid)).to_have_class(re.compile(r"\bdot-awaiting_approval\b"))
    card = second.locator(f'#inbox-cards [data-request-id="perm_{cid}_call_1"]')
    await expect(card.locator(".tool-name")).to_have_text("write_file")
    await expect(card.locator(".permission")).to_have_text("write")
    await expect(card.locator(".arguments")).to_contain_text('"content": "hello inbox"')
    await expect(card.locator(".card-times")).to_contain_text("Expires")
    await expect(second.locator("#pending-total")).to_have_text("1")
    shot = await screenshot(second, "inbox-awaiting-approval.png")
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(shot, _docs(README_SCREENSHOT))
    assert not (workspace_of(settings, cid) / "notes.txt").exists()

    await first.locator(f'#conversation-approvals [data-request-id="perm_{cid}_call_1"] .button-allow').click()

    for tab in (first, second):
        await expect(dot(tab, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    await expect(first.locator(".message-tool .tool-result")).to_have_text("Wrote 11 bytes to notes.txt")
    await expect(first.locator("#decided-cards .card-outcome")).to_contain_text("Allowed by web")
    await expect(second.locator("#inbox-empty")).to_be_visible()
    await screenshot(first, "conversation-allowed.png")
    assert (workspace_of(settings, cid) / "notes.txt").read_text() == "hello inbox"
    assert inbox.problems == []


async def test_deny_with_a_reason_shows_the_denial_and_a_message_starts_the_next_turn(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "run_shell", {"command": "make deploy"}))
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "deploy it"))

    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-awaiting_approval\b"))
    await page.fill("#decider-name", "dana")
    await page.locator(f'li.conversation[data-conversation-id="{cid}"] a').click()
    card = page.locator(f'#conversation-approvals [data-request-id="perm_{cid}_call_1"]')
    await card.locator(".reason").fill("not on a Friday")
    await card.locator(".button-deny").click()

    denial = page.locator(".message-denied")
    await expect(denial).to_contain_text("dana denied this run_shell call")
    await expect(denial).to_contain_text("not on a Friday")
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    await expect(page.locator("#decided-cards .card-outcome")).to_contain_text("Denied by dana")
    await screenshot(page, "conversation-denied.png")

    # The message box starts the next turn: the model asks again, and the dot turns orange again.
    await page.fill("#message-text", "try again on Monday")
    await page.click("#message-form button[type=submit]")
    await expect(page.locator(".message-user .message-text").last).to_have_text("try again on Monday")
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-awaiting_approval\b"))

    # "Always allow for this conversation" runs it, and the conversation remembers the tool.
    again = page.locator(f'#conversation-approvals [data-request-id="perm_{cid}_call_1_2"]')
    await again.locator(".button-always").click()
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    await expect(page.locator("#decided-cards")).to_contain_text("Always allowed by dana")
    await expect(page.locator(".message-tool .tool-result").last).to_contain_text("exit code")
    assert (await client.get_workflow_handle(cid).query("get_state"))["always_allow"] == ["run_shell"]
    assert inbox.problems == []


async def test_markup_the_model_wrote_is_shown_literally_and_never_runs(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    image = "<img src=x onerror=alert(1)>"
    script = "<script>alert(2)</script>"

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            call = ("call_1", "write_file", {"path": f"{image}.txt", "content": script})
            return tool_reply(call, text=f"Let me write {image} and {script}")
        return text_reply("done")

    model.behaviour = behave
    page = await inbox.open(PHONE)
    cid = histories.track(await start_conversation(client, settings, f"please write {script}"))

    card = page.locator(f'#inbox-cards [data-request-id="perm_{cid}_call_1"]')
    await expect(card.locator(".arguments")).to_contain_text(image)
    await expect(card.locator(".arguments")).to_contain_text(script)
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-awaiting_approval\b"))
    await screenshot(page, "inbox-phone.png")

    await page.locator(f'li.conversation[data-conversation-id="{cid}"] a').click()
    assistant = page.locator(".message-assistant .message-text")
    await expect(assistant).to_have_text(f"Let me write {image} and {script}")
    await expect(page.locator(".message-user .message-text")).to_have_text(f"please write {script}")
    await expect(page.locator(".tool-call .arguments")).to_contain_text(image)
    assert await page.locator("main img, main script").count() == 0
    assert await page.evaluate("document.querySelectorAll('img[src=x]').length") == 0
    await screenshot(page, "conversation-phone-markup.png")
    assert inbox.problems == []


async def test_token_login_and_a_decision_while_no_worker_runs(
    browser: Browser, env: WorkflowEnvironment, client: Client, settings: Settings
) -> None:
    """The inbox reads the projection alone; a decision goes out by signal and shows as sent."""
    guarded = replace(settings, ui_token="browser-token")
    cid = await start_conversation(client, guarded, "write notes (no worker runs)")
    request_id = await seed_pending(guarded, cid)
    try:
        async with serve_inbox(browser, env, guarded) as inbox:
            page = await inbox.tab()
            await page.goto(inbox.served.url + "/")
            await expect(page).to_have_url(re.compile(r"/login$"))
            await page.fill("#token", "browser-token")
            await page.click("button[type=submit]")
            await expect(page.locator("#live-status")).to_have_text("live")
            await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-awaiting_approval\b"))
            await expect(page.locator("#logout-form")).to_be_visible()

            await page.locator(f'li.conversation[data-conversation-id="{cid}"] a').click()
            await expect(page.locator("#conversation-notice")).to_contain_text("No worker answered")
            card = page.locator(f'#conversation-approvals [data-request-id="{request_id}"]')
            await card.locator(".button-allow").click()
            await expect(card).to_have_attribute("data-status", "sent")
            await expect(card.locator(".card-outcome")).to_contain_text("Allowed by web")
            assert inbox.problems == []
    finally:
        await client.get_workflow_handle(cid).terminate("test over")


def _docs(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def test_long_lists_come_a_page_at_a_time(inbox: Inbox, settings: Settings) -> None:
    """60 conversations and 55 waiting approvals: the first page of each, then the rest on request."""
    for i in range(60):
        await seed_conversation(settings, f"conv-page-{i:02d}", "idle")
    for i in range(55):
        await seed_pending(settings, "conv-page-00", tool_call_id=f"call_{i}")
    page = await inbox.open()
    conversations = page.locator("li.conversation")
    await expect(conversations).to_have_count(50)
    await expect(page.locator("#inbox-cards .approval")).to_have_count(50)
    await expect(page.locator("#pending-total")).to_have_text("50+")
    await page.locator("#conversation-more").click()
    await expect(conversations).to_have_count(60)
    await expect(page.locator("#conversation-more")).to_be_hidden()
    await page.locator("#pending-more").click()
    await expect(page.locator("#inbox-cards .approval")).to_have_count(55)
    await expect(page.locator("#pending-total")).to_have_text("55")
    assert inbox.problems == []
