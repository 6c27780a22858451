"""The inbox in real Chromium: hidden characters shown escaped and flagged, long arguments never cut
off silently, and conversation ids with any characters opened and decided."""

from __future__ import annotations

import re
import unicodedata

import pytest
from playwright.async_api import expect
from temporalio.client import Client

from config.settings import Settings
from core.visible import is_hidden
from doors import control
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, dot, screenshot
from tests.support.helpers import workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary

OVERRIDE = "echo safe \u202e; touch X #"


async def test_a_right_to_left_override_is_shown_escaped_and_flagged_and_runs_as_written(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "run_shell", {"command": OVERRIDE}))
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "echo something"))

    card = page.locator(f'#inbox-cards [data-request-id="perm_{cid}_call_1"]')
    arguments = card.locator(".arguments")
    await expect(arguments).to_contain_text('"command": "echo safe \\u202e; touch X #"')
    assert "\u202e" not in (await arguments.text_content() or "")
    await expect(card.locator(".hidden-flag")).to_contain_text("Contains hidden characters")
    await expect(card).to_have_attribute("data-hidden-characters", "true")
    await screenshot(page, "inbox-hidden-characters.png")

    await card.locator(".button-allow").click()
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    # What ran is the model's text byte for byte: the override hid `touch X`, and it ran.
    assert (workspace_of(settings, cid) / "X").exists()
    await page.locator(f'li.conversation[data-conversation-id="{cid}"] a').click()
    call = page.locator(".message-assistant").first
    await expect(call.locator(".tool-call .arguments")).to_contain_text("\\u202e")
    await expect(call.locator(".hidden-flag")).to_be_visible()
    assert inbox.problems == []


async def test_long_arguments_say_they_are_folded_and_unfold_in_full(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    content = "\n".join(f"line {n}" for n in range(1, 601)) + "\nrm -rf at the very end"
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "long.txt", "content": content}))
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "write a long file"))

    card = page.locator(f'#inbox-cards [data-request-id="perm_{cid}_call_1"]')
    more = card.locator(".show-more")
    await expect(more).to_contain_text("show all")
    await expect(card.locator(".arguments")).to_have_class(re.compile(r"\bcollapsed\b"))
    await more.click()
    await expect(more).to_have_count(0)
    await expect(card.locator(".arguments")).not_to_have_class(re.compile(r"\bcollapsed\b"))
    await expect(card.locator(".arguments")).to_contain_text("rm -rf at the very end")
    end = card.locator(".arguments")
    assert await end.evaluate("node => node.scrollHeight <= node.clientHeight + 1")
    await client.get_workflow_handle(cid).terminate("test over")
    assert inbox.problems == []


async def test_the_page_and_python_agree_on_what_is_hidden(inbox: Inbox) -> None:
    """visible.js mirrors core/visible.py for every code point both Unicode versions have assigned."""
    page = await inbox.open()
    ranges = [(0, 0x30000), (0xE0000, 0xE0200)]
    in_js = set(
        await page.evaluate(
            """async (ranges) => {
                const { isHidden } = await import("/static/visible.js");
                const out = [];
                for (const [low, high] of ranges)
                  for (let c = low; c < high; c++)
                    if (!(c >= 0xd800 && c < 0xe000) && isHidden(String.fromCodePoint(c))) out.push(c);
                return out;
            }""",
            ranges,
        )
    )
    in_python = {c for low, high in ranges for c in range(low, high) if not 0xD800 <= c < 0xE000 and is_hidden(chr(c))}
    differ = {c for c in in_js ^ in_python if unicodedata.category(chr(c)) != "Cn"}
    assert sorted(differ) == []
    assert {0x202E, 0x2066, 0x200B, 0x2060, 0xFEFF, 0x1B, 0xE0041} <= in_js
    assert not {0x20, 0x0A, 0x09, ord("a"), 0x1F642} & in_js


async def test_ids_with_slashes_percent_spaces_and_unicode_open_and_decide(
    inbox: Inbox,
    model: ScriptedModel,
    client: Client,
    settings: Settings,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # New conversations are refused such ids; an earlier release, which had no check, could start one.
    monkeypatch.setattr(control, "check_conversation_id", lambda conversation_id: conversation_id)
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "odd.txt", "content": "odd"}))
    cid = histories.track(await start_conversation(client, settings, "write odd", "team/a b%2F ü?#x"))
    page = await inbox.open()
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-awaiting_approval\b"))

    await page.locator(f'li.conversation[data-conversation-id="{cid}"] a').click()
    await expect(page.locator("#conversation-title")).to_have_text(cid)
    card = page.locator("#conversation-approvals .card")
    await expect(card).to_have_attribute("data-request-id", f"perm_{cid}_call_1")
    await card.locator(".button-allow").click()
    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    await expect(page.locator("#decided-cards .card-outcome")).to_contain_text("Allowed by web")
    assert (workspace_of(settings, cid) / "odd.txt").read_text() == "odd"
    assert inbox.problems == []
