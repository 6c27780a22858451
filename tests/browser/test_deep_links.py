"""A card's deep link, /approvals/REQUEST_ID: through the login and back to it, and in real Chromium the
inbox opens straight to the card, which can be decided there."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import httpx
from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.browser_support import screenshot, serve_inbox
from tests.support.helpers import approval_row, start_and_wait, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import served_app

TOKEN = "link-token"


async def test_a_deep_link_goes_through_the_login_and_back_to_the_card_only_on_this_site(
    settings: Settings,
) -> None:
    guarded = replace(settings, ui_token=TOKEN)
    served = served_app(guarded, "127.0.0.1:1")  # no Temporal needed: pages and the login only
    link = "/approvals/perm_conv-1_call_1"
    try:
        async with httpx.AsyncClient(base_url=served.url) as http:
            first = await http.get(link)
            assert (first.status_code, first.headers["location"]) == (303, f"/login?next={quote(link, safe='')}")
            form = await http.get(first.headers["location"])
            assert f'name="next" value="{link}"' in form.text
            origin = {"Origin": served.url}
            wrong = await http.post("/login", data={"token": "nope", "next": link}, headers=origin)
            assert wrong.status_code == 401 and f'value="{link}"' in wrong.text
            logged_in = await http.post("/login", data={"token": TOKEN, "next": link}, headers=origin)
            assert (logged_in.status_code, logged_in.headers["location"]) == (303, link)
            page = await http.get(link)
            assert page.status_code == 200 and '<script type="module" src="/static/app.js">' in page.text
            for elsewhere in ("https://evil.example/approvals/x", "//evil.example/approvals/x", "/api/audit"):
                away = await http.post("/login", data={"token": TOKEN, "next": elsewhere}, headers=origin)
                assert away.headers["location"] == "/", elsewhere
    finally:
        served.stop()


async def test_the_inbox_opens_straight_to_the_linked_card(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
) -> None:
    guarded = replace(settings, ui_token=TOKEN)
    model.behaviour = calls_then_summary(("c1", "write_file", {"path": "linked.txt", "content": "from a link"}))
    async with serve_inbox(browser, env, guarded, client) as inbox:
        started = await start_and_wait(client, guarded, "write via a link", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        request_id = row["request_id"]
        page = await inbox.tab()
        await page.goto(f"{inbox.served.url}/approvals/{quote(request_id, safe='')}")
        await page.fill("#token", TOKEN)
        await page.click("button[type=submit]")
        card = page.locator(f'#conversation-view [data-request-id="{request_id}"]')
        await expect(card).to_have_class(re.compile(r"\bcard-linked\b"))
        await expect(card).to_be_in_viewport()
        assert page.url.endswith(f"/#/conversations/{cid}")
        await screenshot(page, "deep-link-card.png")
        await card.locator(".button-allow").click()
        await wait_status(client, cid, "idle")
    assert approval_row(guarded.approvals_db, request_id)["decision"] == "allow"
    assert (workspace_of(guarded, cid) / "linked.txt").read_text() == "from a link"
