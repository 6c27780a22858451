"""The UI's doors: any valid id works in every route, the full origin is compared, bodies are
bounded while they stream, and any Last-Event-ID is taken as "from now" without breaking the stream."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from urllib.parse import quote

import httpx
import pytest
import pytest_asyncio
from hypothesis import given
from hypothesis import strategies as st
from temporalio.client import Client

from config.settings import Settings
from core.contract import WORKFLOW_TYPE
from core.conversation_model import ConversationInput
from tests.support.helpers import approval_row, rows
from tests.support.ui_fixtures import ServedApp, api_client, seed_conversation, seed_pending
from tests.ui.test_ui_events import _read_events
from ui.events import MAX_POSITION, parse_position
from ui.limits import MAX_BODY_BYTES
from ui.server import create_app

ODD_IDS = ["team/a b", "100%25 sure", "ü/ñ?#x", "a%2Fb/decision"]


@pytest_asyncio.fixture
async def odd_workflow(client: Client, settings: Settings, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A running conversation (no worker) whose id holds a slash, a percent sign, spaces or unicode.

    New conversations are refused such ids at start; an earlier release allowed them, so one is
    started here past that check, as it would still be running after an upgrade."""
    conversation_id = f"{request.param} {uuid.uuid4().hex[:6]}"
    start = ConversationInput(conversation_id=conversation_id, inbox=["write odd"])
    await client.start_workflow(WORKFLOW_TYPE, start, id=conversation_id, task_queue=settings.task_queue)
    yield conversation_id
    await client.get_workflow_handle(conversation_id).terminate("test over")


def _path(value: str) -> str:
    return quote(value, safe="")  # as encodeURIComponent writes it in the page


@pytest.mark.parametrize("odd_workflow", ODD_IDS, indirect=True)
async def test_any_id_is_listed_opened_and_decided(client: Client, settings: Settings, odd_workflow: str) -> None:
    request_id = await seed_pending(settings, odd_workflow)
    async with api_client(settings, client) as http:
        listed = (await http.get("/api/conversations")).json()
        opened = await http.get(f"/api/conversations/{_path(odd_workflow)}")
        filtered = await http.get("/api/approvals", params={"conversation_id": odd_workflow})
        one = await http.get(f"/api/approvals/{_path(request_id)}")
        decided = await http.post(f"/api/approvals/{_path(request_id)}/decision", json={"decision": "deny"})
        sent = await http.post(f"/api/conversations/{_path(odd_workflow)}/messages", json={"text": "hi"})
    assert odd_workflow in [c["conversation_id"] for c in listed]
    assert opened.status_code == 200, opened.text
    assert opened.json()["conversation_id"] == odd_workflow
    assert [a["request_id"] for a in filtered.json()] == [request_id]
    assert (one.status_code, one.json()["request_id"]) == (200, request_id)
    assert decided.status_code == 200, decided.text
    assert rows(settings.approvals_db, "SELECT decision FROM ui_decision_claims") == [{"decision": "deny"}]
    assert sent.status_code == 202, sent.text


async def test_an_empty_id_is_not_found(settings: Settings) -> None:
    async with api_client(settings, None) as http:
        codes = [
            (await http.get("/api/conversations/")).status_code,
            (await http.get("/api/approvals/")).status_code,
            (await http.post("/api/approvals//decision", json={"decision": "allow"})).status_code,
        ]
    assert codes == [404, 404, 404]


async def test_origin_must_match_scheme_host_and_port(client: Client, settings: Settings) -> None:
    request_id = await seed_pending(settings, "conv-origin")
    path = f"/api/approvals/{request_id}/decision"
    origins = ["https://127.0.0.1", "http://127.0.0.1:8443", "http://localhost", "http://127.0.0.1:notaport", "x"]
    async with api_client(settings, client) as http:
        refused = [
            (await http.post(path, json={"decision": "allow"}, headers={"Origin": o})).status_code for o in origins
        ]
        # The same origin written with its default port is the same origin (then 409: no such workflow).
        same = await http.post(path, json={"decision": "allow"}, headers={"Origin": "http://127.0.0.1:80"})
    assert refused == [403] * len(origins)
    assert same.status_code != 403, same.text
    assert approval_row(settings.approvals_db, request_id)["decision"] is None


async def test_a_body_over_the_limit_is_refused_while_it_streams(settings: Settings) -> None:
    request_id = await seed_pending(settings, "conv-big")
    read: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(64):
            read.append(1)
            yield b" " * 65536

    routes = [f"/api/approvals/{request_id}/decision", "/api/conversations", "/api/conversations/c/messages", "/login"]
    async with api_client(settings, None) as http:
        declared = [
            await http.post(
                r, content=b"{}", headers={"content-length": str(10**9), "content-type": "application/json"}
            )
            for r in routes
        ]
        streamed = await http.post(routes[0], content=chunks(), headers={"content-type": "application/json"})
    assert [d.status_code for d in declared] == [413] * len(routes)
    assert streamed.status_code == 413
    assert declared[0].json()["error"]["type"] == "PayloadTooLarge"
    assert len(read) <= MAX_BODY_BYTES // 65536 + 2  # refused once past the limit, not after reading it all
    assert approval_row(settings.approvals_db, request_id)["decision"] is None


@given(st.text() | st.from_regex(r"\A\s*[0-9]{1,30}\s*\Z"))
def test_parse_position_never_fails_and_accepts_only_plain_positions(raw: str) -> None:
    position = parse_position(raw)
    assert position is None or ((0 <= position <= MAX_POSITION and str(position) == raw.strip().lstrip("0")) or "0")
    if raw.strip().isascii() and raw.strip().isdigit() and int(raw.strip()) <= MAX_POSITION:
        assert position == int(raw.strip())
    else:
        assert position is None


BAD_POSITIONS = [
    "garbage",
    "-1",
    "-0",
    "1.5",
    "1e3",
    "0x10",
    "1 2",
    "9" * 5000,
    str(2**63),
    str(2**200),
    "²",
    "١٢",
    "\uff11\uff12",
]


async def test_any_last_event_id_is_from_now_and_the_stream_keeps_working(settings: Settings) -> None:
    await seed_conversation(settings, "conv-1", "running", events=("turn.started",))
    served = ServedApp(create_app(settings), settings).start()
    try:
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
            for n, raw in enumerate(BAD_POSITIONS):
                by_header = {"headers": {"Last-Event-ID": raw.encode()}}
                by_query = {"params": {"last_event_id": raw}}
                for how in (by_header, by_query):
                    async with http.stream("GET", "/api/events", **how) as stream:  # type: ignore[arg-type]
                        assert stream.status_code == 200, raw
                        lines = stream.aiter_lines()
                        [ready] = await asyncio.wait_for(_read_events(lines, 1), timeout=10)
                        latest = ready["data"]["after"]
                        assert ready["event"] == "ready"
                        await seed_conversation(settings, "conv-1", "idle", events=(f"turn.completed.{n}.{id(how)}",))
                        [live] = await asyncio.wait_for(_read_events(lines, 1), timeout=10)
                        assert int(live["id"]) == latest + 1, raw
    finally:
        await asyncio.to_thread(served.stop)
