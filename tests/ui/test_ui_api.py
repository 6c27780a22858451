"""The approvals UI's HTTP API, in-process over a real projection file and a real Temporal dev server."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest_asyncio
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.support.helpers import approval_row, rows
from tests.support.postgres import on_both_backends
from tests.support.ui_fixtures import api_client, seed_conversation, seed_pending

pytestmark = on_both_backends


@pytest_asyncio.fixture
async def idle_workflow(client: Client, settings: Settings) -> AsyncIterator[str]:
    """A running conversation workflow with no worker: signals reach it, queries do not answer."""
    conversation_id = await start_conversation(client, settings, "write hello", f"ui-api-{uuid.uuid4().hex[:8]}")
    yield conversation_id
    await client.get_workflow_handle(conversation_id).terminate("test over")


async def test_listings_come_from_the_projection_newest_first(settings: Settings) -> None:
    now = datetime.now(UTC)
    await seed_conversation(settings, "conv-old", "idle", at=now - timedelta(minutes=5))
    await seed_conversation(settings, "conv-failed", "failed", at=now - timedelta(minutes=1))
    request_id = await seed_pending(settings, "conv-waiting", arguments={"command": "ls -la"}, tool_name="run_shell")
    async with api_client(settings, None) as http:
        conversations = (await http.get("/api/conversations")).json()
        pending = (await http.get("/api/approvals", params={"status": "pending"})).json()
        resolved = (await http.get("/api/approvals", params={"status": "resolved"})).json()
        one = await http.get(f"/api/approvals/{request_id}")
        bad_filter = await http.get("/api/approvals", params={"status": "whatever"})

    assert [c["conversation_id"] for c in conversations] == ["conv-waiting", "conv-failed", "conv-old"]
    assert conversations[0]["turn_status"] == "awaiting_approval"
    assert conversations[0]["pending_count"] == 1
    assert conversations[0]["temporal_url"] == "http://localhost:8233/namespaces/default/workflows/conv-waiting"
    [row] = pending
    assert (row["request_id"], row["tool_name"], row["status"]) == (request_id, "run_shell", "pending")
    assert row["arguments"] == {"command": "ls -la"}
    assert resolved == []
    assert one.status_code == 200 and one.json()["request_id"] == request_id
    assert bad_filter.status_code == 422


async def test_decision_codes_and_sent_status_with_no_worker(
    client: Client, settings: Settings, idle_workflow: str
) -> None:
    request_id = await seed_pending(settings, idle_workflow)
    async with api_client(settings, client) as http:
        unknown = await http.post("/api/approvals/perm_nope_call_9/decision", json={"decision": "allow"})
        first = await http.post(
            f"/api/approvals/{request_id}/decision", json={"decision": "deny", "reason": "not today", "name": "carol"}
        )
        second = await http.post(f"/api/approvals/{request_id}/decision", json={"decision": "allow"})
        sent = (await http.get("/api/approvals", params={"status": "sent"})).json()

    assert unknown.status_code == 404
    assert unknown.json()["error"]["type"] == "UnknownApproval"
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "sent"
    assert second.status_code == 409
    assert second.json()["error"]["type"] == "ApprovalAlreadyResolved"
    assert second.json()["error"]["approval"]["claimed_by"] == "carol"
    [row] = sent
    assert (row["claimed_decision"], row["claimed_by"], row["status"]) == ("deny", "carol", "sent")
    # The signal is in the workflow's history even though no worker has run it yet.
    history = await client.get_workflow_handle(idle_workflow).fetch_history()
    signals = [e for e in history.events if e.HasField("workflow_execution_signaled_event_attributes")]
    assert [s.workflow_execution_signaled_event_attributes.signal_name for s in signals] == ["approval_decision"]


async def test_two_decisions_at_once_first_wins_and_the_other_gets_409(
    client: Client, settings: Settings, idle_workflow: str
) -> None:
    request_id = await seed_pending(settings, idle_workflow)
    async with api_client(settings, client) as http:
        answers = await asyncio.gather(
            http.post(f"/api/approvals/{request_id}/decision", json={"decision": "allow", "name": "ann"}),
            http.post(f"/api/approvals/{request_id}/decision", json={"decision": "deny", "name": "ben"}),
        )
    assert sorted(a.status_code for a in answers) == [200, 409]
    winner = next(a for a in answers if a.status_code == 200).json()["decision"]["decided_by"]
    claims = rows(settings.approvals_db, "SELECT decided_by FROM ui_decision_claims WHERE request_id = ?", request_id)
    assert claims == [{"decided_by": winner}]


async def test_conversation_view_says_when_no_worker_answers(
    client: Client, settings: Settings, idle_workflow: str
) -> None:
    request_id = await seed_pending(settings, idle_workflow)
    not_projected = await start_conversation(client, settings, "just started", f"ui-api-{uuid.uuid4().hex[:8]}")
    async with api_client(settings, client) as http:
        view, fresh, missing = await asyncio.gather(
            http.get(f"/api/conversations/{idle_workflow}"),
            http.get(f"/api/conversations/{not_projected}"),
            http.get("/api/conversations/conv-that-never-was"),
        )
    await client.get_workflow_handle(not_projected).terminate("test over")
    assert view.status_code == 200
    body = view.json()
    assert body["worker_online"] is False
    assert "worker" in body["notice"]
    assert body["turn_status"] == "awaiting_approval"
    assert [a["request_id"] for a in body["pending_approvals"]] == [request_id]
    # Not in the projection yet: the status comes from the workflow's search attributes.
    assert (fresh.status_code, fresh.json()["turn_status"]) == (200, "running")
    assert missing.status_code == 404


async def test_token_guards_pages_and_api(settings: Settings) -> None:
    guarded = replace(settings, ui_token="s3cret-token")
    await seed_conversation(guarded, "conv-a")
    async with api_client(guarded, None) as http:
        assert (await http.get("/api/conversations")).status_code == 401
        assert (await http.get("/api/events")).status_code == 401
        assert (await http.get("/static/app.js")).status_code == 401
        assert (await http.get("/static/style.css")).status_code == 200
        page = await http.get("/")
        assert (page.status_code, page.headers["location"]) == (303, "/login")
        bearer = await http.get("/api/conversations", headers={"Authorization": "Bearer s3cret-token"})
        assert bearer.status_code == 200
        wrong = await http.post("/login", content=b"token=nope", headers={"content-type": _FORM})
        assert wrong.status_code == 401
        assert "session" not in wrong.headers.get("set-cookie", "")
        login = await http.post("/login", content=b"token=s3cret-token", headers={"content-type": _FORM})
        assert login.status_code == 303
        cookie = login.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "s3cret-token" not in cookie
        assert (await http.get("/api/conversations")).status_code == 200
        assert (await http.get("/")).status_code == 200


_FORM = "application/x-www-form-urlencoded"


def _claims(settings: Settings) -> list[dict]:
    return rows(settings.approvals_db, "SELECT * FROM ui_decision_claims")


async def test_cross_site_requests_are_refused(client: Client, settings: Settings, idle_workflow: str) -> None:
    request_id = await seed_pending(settings, idle_workflow)
    path = f"/api/approvals/{request_id}/decision"
    async with api_client(settings, client) as http:
        evil_origin = await http.post(path, json={"decision": "allow"}, headers={"Origin": "https://evil.example"})
        cross_site = await http.post(path, json={"decision": "allow"}, headers={"Sec-Fetch-Site": "cross-site"})
        null_origin = await http.post("/api/conversations", json={"message": "hi"}, headers={"Origin": "null"})
        foreign_host = await http.get("/api/conversations", headers={"Host": "attacker.example"})
        refused_left_no_trace = approval_row(settings.approvals_db, request_id)["decision"] is None and not _claims(
            settings
        )
        same_site = await http.post(
            path,
            json={"decision": "allow"},
            headers={"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "same-origin"},
        )
    assert [evil_origin.status_code, cross_site.status_code, null_origin.status_code] == [403, 403, 403]
    assert evil_origin.json()["error"]["type"] == "CrossSiteRequest"
    assert refused_left_no_trace
    assert foreign_host.status_code == 400
    assert same_site.status_code == 200


async def test_page_forbids_inline_script(settings: Settings) -> None:
    async with api_client(settings, None) as http:
        page = await http.get("/")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    html = page.text.lower()
    assert "<script>" not in html and " onclick=" not in html and " onload=" not in html
    assert '<script type="module" src="/static/app.js"></script>' in html


async def test_start_and_message_through_the_api(client: Client, settings: Settings) -> None:
    async with api_client(settings, client) as http:
        started = await http.post("/api/conversations", json={"message": "hello there"})
        assert started.status_code == 201
        conversation_id = started.json()["conversation_id"]
        sent = await http.post(f"/api/conversations/{conversation_id}/messages", json={"text": "and again"})
        missing = await http.post("/api/conversations/conv-nobody/messages", json={"text": "hi"})
    await client.get_workflow_handle(conversation_id).terminate("test over")
    assert sent.status_code == 202
    assert missing.status_code == 404


# ---- malformed bodies: every one is a 4xx, never a 500, and changes nothing ----------------------
_VALID_KEYS = {"decision", "reason", "name"}


def _is_valid_decision_body(value: object) -> bool:
    """Independent of the app's model: what a well-formed decision body looks like."""
    if not isinstance(value, dict) or not set(value) <= _VALID_KEYS:
        return False
    if value.get("decision") not in ("allow", "deny", "always_allow"):
        return False
    reason, name = value.get("reason"), value.get("name")
    reason_ok = reason is None or (isinstance(reason, str) and len(reason) <= 2000)
    name_ok = name is None or (isinstance(name, str) and 1 <= len(name) <= 100)
    return reason_ok and name_ok


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_decision_like = st.fixed_dictionaries(
    {"decision": st.sampled_from(["allow", "deny", "always_allow", "ALLOW", "", "yes"]) | _json_values},
    optional={"reason": _json_values, "name": _json_values, "request_id": _json_values, "extra": _json_values},
)
_bodies = st.one_of(
    st.binary(max_size=64),
    _json_values.map(lambda v: json.dumps(v).encode()),
    _decision_like.filter(lambda v: not _is_valid_decision_body(v)).map(lambda v: json.dumps(v).encode()),
)


@hypothesis_settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=_bodies, content_type=st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain"])
)
async def test_malformed_decision_bodies_are_4xx_and_change_nothing(
    settings: Settings, body: bytes, content_type: str
) -> None:
    request_id = await seed_pending(settings, "conv-fuzzed")
    if _is_valid_decision_body(_loads_or_none(body)) and content_type != "text/plain":
        return  # a well-formed body would be a real decision; this test is about the others
    before = approval_row(settings.approvals_db, request_id)
    async with api_client(settings, None) as http:
        answer = await http.post(
            f"/api/approvals/{request_id}/decision", content=body, headers={"content-type": content_type}
        )
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.text)
    assert answer.json()["error"]["status"] == answer.status_code
    assert approval_row(settings.approvals_db, request_id) == before
    assert _claims(settings) == []


def _loads_or_none(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return None


async def test_malformed_bodies_named_cases(settings: Settings) -> None:
    request_id = await seed_pending(settings, "conv-cases")
    path = f"/api/approvals/{request_id}/decision"
    cases = [
        (b"{not json", "application/json", 400),
        (b"\xff\xfe", "application/json", 400),
        (b"[1, 2]", "application/json", 422),
        (b'{"decision": "maybe"}', "application/json", 422),
        (b'{"decision": "allow", "reason": 5}', "application/json", 422),
        (b'{"decision": "allow", "surprise": true}', "application/json", 422),
        (b'{"decision": "allow"}', "application/x-www-form-urlencoded", 415),
        (b"", "application/json", 400),
    ]
    async with api_client(settings, None) as http:
        codes = [
            (await http.post(path, content=body, headers={"content-type": ctype})).status_code
            for body, ctype, _ in cases
        ]
        start = await http.post("/api/conversations", json={"message": ""})
    assert codes == [expected for _, _, expected in cases]
    assert start.status_code == 422
    assert _claims(settings) == []
