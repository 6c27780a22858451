"""Chromium for the browser tests: where it is and how it starts, the inbox served for a test (with
or without a worker) and its tabs, a person logged in with their own token, and screenshots.

The fixtures that use it (`browser`, `inbox`) are in tests/browser/conftest.py; tests elsewhere may
import what they need from here."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.support.ui_fixtures import ServedApp, served_app
from worker import build_worker

CHROMIUM_PATH = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path("build/screenshots")
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@dataclass
class Inbox:
    """The UI served for one test, and the tabs a test opens on it in one Chromium."""

    served: ServedApp
    browser: Browser
    context: BrowserContext
    problems: list[str]
    _contexts: list[BrowserContext] = field(default_factory=list, repr=False)

    async def open(self, viewport: dict[str, int] = LAPTOP) -> Page:
        """A tab on the inbox (every such tab shares one browser session) once it says it is live;
        dialogs, page errors and console errors are collected as problems."""
        page = await self.context.new_page()
        await page.set_viewport_size(viewport)  # type: ignore[arg-type]
        self._watch(page)
        await page.goto(self.served.url + "/")
        await expect(page.locator("#live-status")).to_have_text("live")
        return page

    async def tab(self, **context_options: Any) -> Page:
        """A blank tab in a browser session of its own (another person), problems collected."""
        context = await self.browser.new_context(**context_options)
        self._contexts.append(context)
        page = await context.new_page()
        self._watch(page)
        return page

    async def log_in(self, token: str) -> Page:
        """A person's own session: the login form with their token, then the live inbox."""
        page = await self.tab()
        await page.goto(self.served.url + "/login")
        await page.fill("#token", token)
        await page.click("button[type=submit]")
        await expect(page.locator("#live-status")).to_have_text("live")
        return page

    async def close(self) -> None:
        for context in [self.context, *self._contexts]:
            await context.close()

    def _watch(self, page: Page) -> None:
        page.on("dialog", lambda dialog: self._dialog(dialog))
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("console", lambda msg: self.problems.append(f"console: {msg.text}") if msg.type == "error" else None)

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()


@asynccontextmanager
async def serve_inbox(
    browser: Browser, env: WorkflowEnvironment, settings: Settings, worker_client: Client | None = None
) -> AsyncIterator[Inbox]:
    """The UI on a free port with its own Temporal client and, given worker_client, a worker on it
    for the settings' task queue (without: the test runs its own, or none); every tab is closed at the end."""
    async with AsyncExitStack() as stack:
        if worker_client is not None:
            await stack.enter_async_context(build_worker(worker_client, settings))
        served = served_app(settings, env.client.service_client.config.target_host)
        stack.callback(served.stop)
        inbox = Inbox(served, browser, await browser.new_context(), [])
        stack.push_async_callback(inbox.close)
        yield inbox


def dot(page: Page, conversation_id: str) -> Any:
    return page.locator(f'li.conversation[data-conversation-id="{conversation_id}"] .dot')


async def screenshot(page: Page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    await page.screenshot(path=str(path), full_page=True)
    return path
