"""A password only a person supplies, typed into the card in real Chromium: the card asks for it in
a password field and offers no always-allow, grant or batch; Allow with the field empty is refused and said so;
filled, the tool gets exactly that value and the card says who supplied it, never what."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.async_api import expect
from temporalio.client import Client

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, dot, screenshot
from tests.support.helpers import start_and_wait
from tests.support.mcp_support import with_config
from tests.support.scripts import ScriptedModel
from tests.support.supplied_support import LOGIN, fills_then_asks, new_canary, received, sha256, vault_server


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    return with_config(settings, tmp_path / "policy.toml", {}, {"vault": vault_server(tmp_path)})


async def test_the_approver_types_the_password_into_the_card_and_only_the_tool_gets_it(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    canary = new_canary()
    model.behaviour = fills_then_asks("dana-at-vault", model_guess="a-guess")
    page = await inbox.open()
    await page.fill("#decider-name", "dana")
    started = await start_and_wait(client, settings, "log in to the vault", histories, pending=1)
    cid, [row] = started.conversation_id, started.pending

    card = page.locator(f'#inbox-cards [data-request-id="{row["request_id"]}"]')
    await expect(card.locator(".tool-name")).to_have_text(LOGIN)
    field = card.locator('.supplied-value[name="password"]')
    await expect(field).to_have_attribute("type", "password")
    await expect(card.locator(".button-always")).to_have_count(0)
    await expect(card.locator(".grant-offer")).to_have_count(0)
    await expect(card.locator(".batch-select")).to_have_count(0)

    await card.locator(".button-allow").click()
    await expect(page.locator("#toast")).to_contain_text("nothing was supplied for password")
    await field.fill(canary)
    await screenshot(page, "inbox-supplied-password.png")
    await card.locator(".button-allow").click()

    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    assert received(settings.workspace_dir) == {"user": "dana-at-vault", "password_sha256": sha256(canary)}
    await page.goto(f"{inbox.served.url}/#/conversations/{cid}")
    resolved = page.locator(f'[data-request-id="{row["request_id"]}"] .card-outcome')
    await expect(resolved).to_contain_text("supplied: password (by dana)")
    assert canary not in await page.content()
    assert [problem for problem in inbox.problems if "422" not in problem] == []
