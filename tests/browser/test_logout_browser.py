"""Logging out in one tab takes every tab of that browser session to /login: the tab that posted the
form by its answer, the others by the `logout` their open event stream says at once."""

from __future__ import annotations

import re
import time
from dataclasses import replace

from playwright.async_api import Browser, expect
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.support.browser_support import serve_inbox

TOKEN = "logout-browser-token"


async def test_logout_in_one_tab_takes_the_other_to_login(
    browser: Browser, env: WorkflowEnvironment, settings: Settings
) -> None:
    async with serve_inbox(browser, env, replace(settings, ui_token=TOKEN)) as inbox:
        leaving = await inbox.log_in(TOKEN)
        other = await leaving.context.new_page()
        await other.goto(inbox.served.url + "/")
        await expect(other.locator("#live-status")).to_have_text("live")

        clicked = time.monotonic()
        await leaving.locator("#logout-form button").click()
        await expect(leaving).to_have_url(re.compile(r"/login$"))
        await expect(other).to_have_url(re.compile(r"/login$"))
        print(f"the other tab was at /login {(time.monotonic() - clicked) * 1000:.0f} ms after the click")
        await expect(other.locator("#token")).to_be_visible()
        assert inbox.problems == []
