"""MCP elicitation answered in the inbox: the reference `everything` server from npm, under the
sandbox, asks for a form mid-call; the question card shows it in Chromium, and the answer, a
decline, or no answer in time (a decline) goes back to the server, whose result reaches the model."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect
from temporalio.client import Client

from activities.tool_sources import ToolSources
from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from doors.control import start_conversation
from storage import elicitations
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, dot, screenshot
from tests.support.helpers import eventually, tool_messages, wait_status
from tests.support.mcp_support import with_config
from tests.support.scripts import ScriptedModel, last_role
from tests.tools.test_mcp_npm_filesystem import NPM_CACHE, QUIET

PACKAGE = "@modelcontextprotocol/server-everything"
ASK = "trigger-elicitation-request"


@pytest.fixture(scope="module")
def everything_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed for this test (apt-get install npm)"
    prefix = tmp_path_factory.mktemp("npm-everything")
    subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--cache", str(NPM_CACHE), "--prefer-offline", *QUIET, PACKAGE],
        check=True,
        capture_output=True,
        timeout=600,
    )
    script = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    assert script.is_file(), f"{PACKAGE} has no {script}"
    return script


@pytest.fixture
def settings(settings: Settings, tmp_path: Path, everything_script: Path) -> Settings:
    """Two names for the server: `everything` waits long for an answer, `hasty` two seconds."""
    command = {"command": "node", "args": [str(everything_script), "stdio"], "timeout_seconds": 60}
    servers = {"everything": command, "hasty": {**command, "elicitation_timeout_seconds": 2}}
    rules = {"allow": [f"mcp__everything__{ASK}", f"mcp__hasty__{ASK}"]}
    configured = with_config(settings, tmp_path / "tools.toml", rules, servers)
    return Settings(**{**configured.__dict__, "tool_sandbox": "unshare"})


def ask_then_report(model: ScriptedModel, server: str) -> None:
    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(("c_ask", f"mcp__{server}__{ASK}", {}))
        return text_reply("the form said: " + str(messages[-1]["content"])[:200])

    model.behaviour = behave


async def test_a_question_is_answered_in_its_card_and_the_answer_reaches_the_model(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    ask_then_report(model, "everything")
    page = await inbox.open()
    cid = histories.track(await start_conversation(client, settings, "fill in the form"))
    card = page.locator("#question-cards .question-card")
    await expect(card.locator(".question-message")).to_have_text("Please provide inputs for the following fields:")
    await expect(card.locator(".question-asker")).to_contain_text(f"mcp__everything__{ASK}")
    await card.locator('[data-field="name"] input').fill("Ann <b>Lee</b>")
    await card.locator('[data-field="check"] input[type="checkbox"]').check()
    await screenshot(page, "inbox-question.png")
    await card.locator("button.primary").click()

    await expect(dot(page, cid)).to_have_class(re.compile(r"\bdot-idle\b"))
    (result,) = tool_messages(await wait_status(client, cid, "idle"))
    assert "- Name: Ann <b>Lee</b>" in result and "- Agreed to terms: true" in result, result
    told = [str(m["content"]) for m in model.reply_requests[-1]["messages"] if m["role"] == "tool"]
    assert any("Ann <b>Lee</b>" in content for content in told), "the server's result reaches the model"
    await expect(page.locator("#questions")).to_be_hidden()
    assert inbox.problems == []


async def test_a_declined_question_and_an_unanswered_one_end_as_declines(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    ask_then_report(model, "everything")
    page = await inbox.open()
    declined = histories.track(await start_conversation(client, settings, "fill in the form"))
    card = page.locator("#question-cards .question-card")
    await card.locator("button.danger").click()
    (result,) = tool_messages(await wait_status(client, declined, "idle"))
    assert "declined" in result, result

    ask_then_report(model, "hasty")
    unanswered = histories.track(await start_conversation(client, settings, "fill in the form, slowly"))
    (timed_out,) = tool_messages(await wait_status(client, unanswered, "idle", timeout=60))
    assert "declined" in timed_out, timed_out
    store = ProjectionStore(settings.approvals_db)
    try:
        asked = await eventually(lambda: _questions_of(store, unanswered))
        assert [q["answer"]["by"] for q in asked] == ["timeout"]
        assert await elicitations.open_questions(store) == []
    finally:
        await store.close()
    assert inbox.problems == []


async def _questions_of(store: ProjectionStore, conversation_id: str) -> list[dict[str, Any]]:
    events, _ = await store.events(0, conversation_id)
    ids = [e["payload"]["question_id"] for e in events if e["event_type"] == elicitations.EVENT_ASKED]
    return [q for q in [await elicitations.question(store, i) for i in ids] if q is not None]


async def test_the_capability_is_declared_only_where_the_inbox_can_answer(settings: Settings) -> None:
    """Without a desk (`starter.py tools`, say) the server is told nothing can answer: it offers no form tool."""
    sources = ToolSources(settings.load_tools(), settings.workspace_dir, settings.sandbox_policy())
    try:
        catalog = await sources.catalog()
    finally:
        await sources.close()
    names = {tool.name for tool in catalog.tools}
    assert "mcp__everything__echo" in names and f"mcp__everything__{ASK}" not in names


async def test_a_question_card_shows_the_servers_words_as_text(inbox: Inbox, settings: Settings) -> None:
    """The message, titles, descriptions and choices are the server's: shown, never run as markup."""
    evil = '<img src=x onerror="window.pwned=1">'
    schema = {
        "type": "object",
        "properties": {
            "pick": {"type": "string", "title": f"pick {evil}", "description": evil, "enum": ["a"], "enumNames": [evil]}
        },
    }
    question = {
        "question_id": "elicit-evil",
        "conversation_id": "conv-evil",
        "request_id": "perm_conv-evil_c1",
        "server": f"srv{evil}",
        "tool_name": "mcp__srv__ask",
        "tool": {},
        "arguments": {},
        "message": f"hello {evil}",
        "schema": schema,
        "asked_at": "2026-01-01T00:00:00+00:00",
        "expires_at": "2999-01-01T00:00:00+00:00",
    }
    store = ProjectionStore(settings.approvals_db)
    try:
        await elicitations.ask(store, question)
    finally:
        await store.close()
    page = await inbox.open()
    card = page.locator('#question-cards [data-question-id="elicit-evil"]')
    await expect(card.locator(".question-message")).to_have_text(f"hello {evil}")
    await expect(card.locator(".question-help")).to_have_text(evil)
    await expect(card.locator("option[value=a]")).to_have_text(evil)
    assert await card.locator("img").count() == 0
    assert await page.evaluate("window.pwned") is None
    assert inbox.problems == []
