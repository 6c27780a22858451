"""The browser tests' fixtures: one Chromium per test process (Debian's, through Playwright's
executable_path; a launch costs two CPU-seconds, so modules share it, each test in its own page or
context) and the inbox served for a test with a worker.

A missing Chromium skips the tests, unless REQUIRE_BROWSER is set (CI sets it), which makes it a
failure: this fixture is the one place that rule lives."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Playwright, async_playwright, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.support.browser_support import CHROMIUM_ARGS, CHROMIUM_PATH, Inbox, serve_inbox

expect.set_options(timeout=30_000)


class SharedChromium:
    """Launched on first use; launched again if a test's crash took it down."""

    def __init__(self, playwright: Playwright) -> None:
        self._playwright = playwright
        self._browser: Browser | None = None

    async def get(self) -> Browser:
        if self._browser is None or not self._browser.is_connected():
            self._browser = await self._playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS)
        return self._browser

    async def close(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            await self._browser.close()


@pytest_asyncio.fixture(scope="session")
async def chromium() -> AsyncIterator[SharedChromium]:
    if not Path(CHROMIUM_PATH).exists():
        if os.environ.get("REQUIRE_BROWSER"):
            pytest.fail(f"REQUIRE_BROWSER is set but there is no Chromium at {CHROMIUM_PATH}")
        pytest.skip(f"no Chromium at {CHROMIUM_PATH} (set CHROMIUM_PATH, or REQUIRE_BROWSER=1 to fail instead)")
    async with async_playwright() as playwright:
        shared = SharedChromium(playwright)
        yield shared
        await shared.close()


@pytest_asyncio.fixture(scope="module")
async def browser(chromium: SharedChromium) -> Browser:
    return await chromium.get()


@pytest_asyncio.fixture
async def inbox(browser: Browser, env: WorkflowEnvironment, client: Client, settings: Settings) -> AsyncIterator[Inbox]:
    """A worker for this test's task queue and the UI on a free port, with its own Temporal client."""
    async with serve_inbox(browser, env, settings, client) as served:
        yield served
