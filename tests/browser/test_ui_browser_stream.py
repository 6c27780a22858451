"""The reply streams into the open conversation in real Chromium; a retried call (the model server
cut off mid-reply, or the worker SIGKILLed mid-stream) starts over visibly, never mixing attempts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply
from tests.conftest import HistoryRecorder
from tests.support.browser_support import Inbox, screenshot, serve_inbox
from tests.support.processes import WorkerProcess, process_env
from tests.support.scripts import ScriptedModel

# Numbered words, so the pieces of two attempts run together could never read as one prefix.
REPLY = "".join(f"w{n} <b>bold?</b> " for n in range(40))

# Every text the streaming item shows, with its attempt, recorded in the page as it changes.
RECORD = """
window.__streamed = [];
new MutationObserver(() => {
  const item = document.querySelector('li[data-streaming]');
  const text = item && item.querySelector('.stream-text');
  if (text) window.__streamed.push([item.dataset.attempt, text.textContent,
                                    Boolean(item.querySelector('.stream-restarted'))]);
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


async def start_from_the_page(page: Page, text: str, histories: HistoryRecorder) -> str:
    await page.fill("#start-message", text)
    await page.click("#start-button")
    await page.wait_for_url(re.compile(r"#/conversations/.+"))
    return histories.track(page.url.split("#/conversations/")[1])


async def recorded_reply(page: Page, client: Client, cid: str) -> str:
    await expect(page.locator("#conversation-status")).to_have_text("idle")
    state = await client.get_workflow_handle(cid).query("get_state")
    final: str = state["messages"][-1]["content"]
    await expect(page.locator(".message-assistant .message-text").last).to_have_text(final)
    await expect(page.locator("li[data-streaming]")).to_have_count(0)
    assert await page.locator("#transcript b").count() == 0, "streamed markup is text, never HTML"
    return final


async def test_the_reply_grows_in_place_and_the_transcript_keeps_the_recorded_message(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    assert model.server is not None
    model.server.chunk_delay = 0.05  # about 4 seconds for the whole reply
    model.behaviour = lambda messages: text_reply(REPLY)
    page = await inbox.open()
    await page.add_init_script(RECORD)
    await page.evaluate(RECORD)
    cid = await start_from_the_page(page, "stream me a reply", histories)

    item = await page.wait_for_selector("li[data-streaming] .stream-text")
    assert item is not None
    first = await item.text_content() or ""
    await page.wait_for_function(
        "n => { const t = document.querySelector('li[data-streaming] .stream-text');"
        " return t && t.textContent.length > n; }",
        arg=len(first),
    )
    await screenshot(page, "conversation-streaming.png")
    assert await recorded_reply(page, client, cid) == REPLY
    seen: list[list[Any]] = await page.evaluate("window.__streamed")
    texts = [text for _, text, _ in seen]
    assert len(set(texts)) > 3, "the text grew in several steps"
    assert all(REPLY.startswith(text) for text in texts) and texts[-1] == REPLY
    assert {attempt for attempt, _, _ in seen} == {"1"} and not any(restarted for _, _, restarted in seen)
    assert len(model.reply_requests) == 1
    assert inbox.problems == []


async def test_a_stream_cut_off_mid_reply_restarts_visibly_and_never_mixes_attempts(
    inbox: Inbox, model: ScriptedModel, client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    assert model.server is not None
    model.server.chunk_delay = 0.05
    model.server.cut_streams = 1  # the model server drops the first reply halfway
    model.behaviour = lambda messages: text_reply(REPLY)
    page = await inbox.open()
    await page.add_init_script(RECORD)
    await page.evaluate(RECORD)
    cid = await start_from_the_page(page, "stream me a reply, twice", histories)

    marker = page.locator("li[data-streaming] .stream-restarted")
    await expect(marker).to_contain_text("attempt 2")
    await screenshot(page, "conversation-stream-restarted.png")
    assert await recorded_reply(page, client, cid) == REPLY
    seen: list[list[Any]] = await page.evaluate("window.__streamed")
    first = [text for attempt, text, _ in seen if attempt == "1"]
    second = [(text, restarted) for attempt, text, restarted in seen if attempt == "2"]
    assert first and second, "both attempts streamed"
    assert all(REPLY.startswith(text) for text in first) and first[-1] != REPLY
    assert all(REPLY.startswith(text) and restarted for text, restarted in second)
    assert second[-1][0] == REPLY
    assert len(model.reply_requests) == 2
    assert inbox.problems == []


@pytest.mark.long
async def test_a_worker_killed_mid_stream_restarts_the_reply_visibly(
    browser: Browser,
    env: WorkflowEnvironment,
    model: ScriptedModel,
    client: Client,
    settings: Settings,
    histories: HistoryRecorder,
    tmp_path: Path,
) -> None:
    assert model.server is not None
    model.server.chunk_delay = 0.025  # about 6 seconds per reply: the kill lands mid-stream
    model.behaviour = lambda messages: text_reply(REPLY * 3)
    address = env.client.service_client.config.target_host
    workers = [WorkerProcess(process_env(settings, address), tmp_path / "worker-1.log").start().wait_ready()]
    try:
        async with serve_inbox(browser, env, settings) as inbox:
            page = await inbox.open()
            await page.add_init_script(RECORD)
            await page.evaluate(RECORD)
            cid = await start_from_the_page(page, "stream while the worker dies", histories)
            await page.wait_for_function(
                "() => { const t = document.querySelector('li[data-streaming] .stream-text');"
                " return t && t.textContent.length > 40; }"
            )
            workers[0].kill()
            replacement = WorkerProcess(process_env(settings, address), tmp_path / "worker-2.log")
            workers.append(replacement.start().wait_ready())

            await expect(page.locator("li[data-streaming] .stream-restarted")).to_contain_text("attempt 2")
            assert await recorded_reply(page, client, cid) == REPLY * 3
            seen: list[list[Any]] = await page.evaluate("window.__streamed")
            assert all((REPLY * 3).startswith(text) for _, text, _ in seen), "no text mixes two attempts"
            assert {attempt for attempt, _, _ in seen} == {"1", "2"}
            assert all(restarted for attempt, _, restarted in seen if attempt == "2")
            assert len(model.reply_requests) == 2
            assert inbox.problems == []
    finally:
        for worker in workers:
            worker.kill()
