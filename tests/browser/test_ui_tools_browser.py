"""A Python tool from examples/ approved from the inbox in Chromium; its card says where it comes from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import expect
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, dot, screenshot
from tests.support.mcp_support import with_config
from tests.support.scripts import ScriptedModel, calls_then_summary


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    rules = {"allow": ["forecast"], "python_tools": ["examples.weather_tools"]}
    return with_config(settings, tmp_path / "tools.toml", rules, {})


async def test_a_python_tool_is_approved_from_its_card_which_shows_its_module(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "report_weather", {"city": "Lima", "observation": "foggy"}))
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "report the weather"))

    card = page.locator(f'#inbox-cards [data-request-id="perm_{cid}_call_1"]')
    await expect(card.locator(".tool-name")).to_have_text("report_weather")
    await expect(card.locator(".card-origin")).to_have_text("Python tool from examples.weather_tools")
    await expect(card.locator(".permission")).to_have_text("write")
    await screenshot(page, "inbox-python-tool.png")
    await card.locator(".button-allow").click()

    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    state = (await client.get_workflow_handle(cid).query("get_state"))["messages"]
    assert [m["content"] for m in state if m["role"] == "tool"] == ['{"city": "Lima", "recorded": "foggy"}']
    assert inbox.problems == []
