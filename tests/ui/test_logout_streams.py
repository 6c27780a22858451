"""A logout ends its session's streams in the UI process that takes it at once, not at the stream's
next credential check (every 2 s): a stream opened with the session's cookie before `POST /logout`
delivers nothing after it but its `logout` (an AG-UI run: RUN_ERROR `SessionEnded`), while the
next conversation, started right after the logout, writes turn.started, message.delta,
permission.request and turn.awaiting_approval that another session's stream receives.

Real Temporal, a worker, the scripted model and the UI served by uvicorn with its own Temporal client."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from doors.control import start_conversation
from tests.support.helpers import eventually, rows
from tests.support.postgres import on_both_backends
from tests.support.scripts import ScriptedModel, first_user_text
from tests.support.ui_fixtures import ServedApp, served_app
from ui.open_streams import AUTH_RECHECK_INTERVAL
from ui.security import SESSION_COOKIE
from worker import build_worker

TOKEN = "logout-streams-token"
FORM = {"content-type": "application/x-www-form-urlencoded"}
A_TURN = ("turn.started", "message.delta", "permission.request", "turn.awaiting_approval")


@dataclass
class Message:
    """One Server-Sent Event as the client read it, and when its last line came."""

    at: float
    event: str
    data: Any


@dataclass
class Followed:
    """Everything one open stream delivered, and when it ended (None: still open)."""

    messages: list[Message] = field(default_factory=list)
    ended_at: float | None = None
    _event: str = "message"
    _data: str = ""

    def take(self, line: str) -> None:
        """One line of the stream: a blank line ends a message; comments (keepalives) are none."""
        if line == "":
            if self._data:
                self.messages.append(Message(time.monotonic(), self._event, json.loads(self._data)))
            self._event, self._data = "message", ""
        elif line.startswith("event: "):
            self._event = line.removeprefix("event: ")
        elif line.startswith("data: "):
            self._data = line.removeprefix("data: ")

    def of(self, conversation_id: str) -> list[Message]:
        return [m for m in self.messages if _conversation_of(m) == conversation_id]

    def since(self, moment: float) -> list[Message]:
        return [m for m in self.messages if m.at >= moment]


def _conversation_of(message: Message) -> str | None:
    return message.data.get("conversation_id") if isinstance(message.data, dict) else None


async def follow(response: httpx.Response, into: Followed) -> None:
    async for line in response.aiter_lines():
        into.take(line)
    into.ended_at = time.monotonic()


def follow_on_a_thread(url: str, cookies: dict[str, str], into: Followed) -> threading.Thread:
    """GET /api/events read on a thread of its own, so its end is seen when it comes, not when the
    test's event loop (which runs the worker too) gets round to it."""

    def read() -> None:
        with (
            httpx.Client(base_url=url, timeout=30, cookies=cookies) as http,
            http.stream("GET", "/api/events") as response,
        ):
            for line in response.iter_lines():
                into.take(line)
        into.ended_at = time.monotonic()

    reader = threading.Thread(target=read, name="logged-out-stream", daemon=True)
    reader.start()
    return reader


async def end_conversation(client: Client, conversation_id: str) -> None:
    with contextlib.suppress(RPCError):  # never started, if the test failed before
        await client.get_workflow_handle(conversation_id).terminate("test over")


async def log_in(url: str) -> dict[str, str]:
    """A browser's session: the login form with the UI token; its cookie."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        login = await http.post("/login", content=f"token={TOKEN}".encode(), headers=FORM)
        assert login.status_code == 303
        return {SESSION_COOKIE: http.cookies[SESSION_COOKIE]}


@pytest.fixture
def guarded(settings: Settings) -> Settings:
    return dataclasses.replace(settings, ui_token=TOKEN)


@pytest_asyncio.fixture
async def ui(env: WorkflowEnvironment, client: Client, guarded: Settings) -> AsyncIterator[ServedApp]:
    async with build_worker(client, guarded):
        served = served_app(guarded, env.client.service_client.config.target_host)
        try:
            yield served
        finally:
            await asyncio.to_thread(served.stop)


def plan_then_write(model: ScriptedModel) -> None:
    """Every conversation's first turn: a streamed plan with a write that waits for a person."""
    model.behaviour = lambda messages: tool_reply(
        ("c_note", "write_file", {"path": "notes.txt", "content": "a note\n"}), text="I will write a note."
    )


@on_both_backends
async def test_a_logout_ends_its_event_streams_before_the_next_conversation_speaks(
    ui: ServedApp, client: Client, guarded: Settings, model: ScriptedModel
) -> None:
    plan_then_write(model)
    leaving, staying = await log_in(ui.url), await log_in(ui.url)
    left, stayed = Followed(), Followed()
    started: list[str] = []
    left_reader = follow_on_a_thread(ui.url, leaving, left)
    async with (
        httpx.AsyncClient(base_url=ui.url, timeout=30, cookies=leaving) as leaving_browser,
        httpx.AsyncClient(base_url=ui.url, timeout=30, cookies=staying) as staying_browser,
        staying_browser.stream("GET", "/api/events") as stayed_stream,
    ):
        stayed_reader = asyncio.create_task(follow(stayed_stream, stayed))
        try:
            await eventually(lambda: _ready(left, stayed), timeout=10)
            # Signed in, the stream delivers a whole turn.
            before = await start_conversation(client, guarded, "before the logout")
            started.append(before)
            await eventually(lambda: _has_turn(left, before))

            logging_out = time.monotonic()  # the logout is written to the stream before its answer comes
            out = await leaving_browser.post("/logout", headers={"origin": ui.url})
            assert out.status_code == 303
            after = await start_conversation(client, guarded, "after the logout")
            started.append(after)
            # The next conversation spoke: another session's stream has its whole turn.
            await eventually(lambda: _has_turn(stayed, after))
            first_spoke = stayed.of(after)[0].at
            await asyncio.to_thread(left_reader.join, 10)
        finally:
            stayed_reader.cancel()
            for conversation_id in started:
                await end_conversation(client, conversation_id)

    assert [m.event for m in left.since(logging_out)] == ["logout"]
    assert left.of(after) == []
    assert left.ended_at is not None and left.ended_at < first_spoke
    assert stayed.ended_at is None  # another session's stream goes on
    ended_in, spoke_in = left.ended_at - logging_out, first_spoke - logging_out
    print(f"stream ended {ended_in * 1000:.1f} ms after the logout was sent; next turn at {spoke_in * 1000:.1f} ms")
    assert ended_in < AUTH_RECHECK_INTERVAL / 2
    async with httpx.AsyncClient(base_url=ui.url, timeout=30, cookies=leaving) as stale:
        assert (await stale.get("/api/events")).status_code == 401


async def _ready(*streams: Followed) -> bool:
    return all(any(m.event == "ready" for m in s.messages) for s in streams)


async def _has_turn(stream: Followed, conversation_id: str) -> bool:
    return set(A_TURN) <= {m.data["event_type"] for m in stream.of(conversation_id)}


async def test_a_logout_ends_its_ag_ui_run_before_the_model_writes(
    ui: ServedApp, client: Client, guarded: Settings, model: ScriptedModel
) -> None:
    """The run is open while the model has not answered; the logout comes, then the model writes."""
    thread = f"agui-logout-{uuid.uuid4().hex[:8]}"
    answer = threading.Event()

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if first_user_text(messages) == "write slowly":
            answer.wait(30)
        return text_reply("text written after the logout " * 20)

    model.behaviour = behave
    session = await log_in(ui.url)
    run = {"threadId": thread, "runId": "run-1", "messages": [{"id": "u1", "role": "user", "content": "write slowly"}]}
    seen = Followed()
    try:
        async with (
            httpx.AsyncClient(base_url=ui.url, timeout=30, cookies=session) as browser,
            browser.stream("POST", "/ag-ui", json=run, headers={"origin": ui.url}) as stream,
        ):
            reader = asyncio.create_task(follow(stream, seen))
            try:
                await eventually(lambda: _running(seen), timeout=30)
                await eventually(lambda: _asked(model), timeout=30)
                logging_out = time.monotonic()
                out = await browser.post("/logout", headers={"origin": ui.url})
                assert out.status_code == 303
                answer.set()
                await asyncio.wait_for(reader, 10)
            finally:
                reader.cancel()
        # The model's text was written to the read model after the logout, and the run never carried it.
        deltas = await eventually(lambda: _deltas(guarded, thread))
    finally:
        answer.set()
        await end_conversation(client, thread)

    after = seen.since(logging_out)
    assert [(m.data["type"], m.data.get("code")) for m in after] == [("RUN_ERROR", "SessionEnded")]
    assert not any(m.data["type"].startswith("TEXT_MESSAGE") for m in seen.messages)
    assert deltas and seen.ended_at is not None
    print(f"AG-UI run ended {(seen.ended_at - logging_out) * 1000:.1f} ms after the logout was sent")
    assert seen.ended_at - logging_out < AUTH_RECHECK_INTERVAL / 2


async def _running(seen: Followed) -> bool:
    snapshots = [m.data["snapshot"] for m in seen.messages if m.data.get("type") == "STATE_SNAPSHOT"]
    return any(snapshot["turnStatus"] == "running" for snapshot in snapshots)


async def _asked(model: ScriptedModel) -> bool:
    return any(first_user_text(body["messages"]) == "write slowly" for body in model.reply_requests)


async def _deltas(settings: Settings, conversation_id: str) -> list[dict[str, Any]]:
    sql = "SELECT event_id FROM ui_events WHERE conversation_id = ? AND event_type = 'message.delta'"
    return rows(settings.approvals_db, sql, conversation_id)
