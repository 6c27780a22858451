"""POST /ag-ui driven by a real AG-UI client (@ag-ui/client's HttpAgent, run by node) against a
real worker: text deltas, a tool call, an interrupt per waiting request, a resume that decides it
(the write happens once), a deny whose reason reaches the model, a bad resume as RUN_ERROR, and a
client killed mid-run whose thread still holds the same interrupt for the next run."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, wait_pending, wait_status
from tests.support.scripts import ScriptedModel, last_role, tool_results
from tests.support.ui_fixtures import ServedApp, served_app
from tests.ui.agui_support import allow, deny, install_client, run_client, user
from worker import build_worker

TOKEN = "agui-test-token"
NOTE = "a note written through AG-UI\n"
PLAN = "I will write the note."


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_client(tmp_path_factory.mktemp("agui-client"))


@pytest.fixture
def agui_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, ui_token=TOKEN)


@pytest_asyncio.fixture
async def ui(env: WorkflowEnvironment, client: Client, agui_settings: Settings) -> AsyncIterator[ServedApp]:
    async with build_worker(client, agui_settings):
        served = served_app(agui_settings, env.client.service_client.config.target_host)
        try:
            yield served
        finally:
            served.stop()


def write_then_report(model: ScriptedModel) -> None:
    """A streamed plan with a write call; after its result, a text quoting the result."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(("c_note", "write_file", {"path": "notes.txt", "content": NOTE}), text=PLAN)
        return text_reply("result: " + " | ".join(str(m["content"]) for m in tool_results(messages)))

    model.behaviour = behave


def notes(settings: Settings) -> list[Path]:
    return [p for p in settings.workspace_dir.rglob("notes.txt") if p.is_file()]


async def test_a_run_streams_text_and_the_call_then_a_resume_writes_once(
    ui: ServedApp,
    script: Path,
    client: Client,
    agui_settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
) -> None:
    write_then_report(model)
    thread = histories.track(f"agui-allow-{uuid.uuid4().hex[:8]}")
    first = await run_client(script, ui.url, TOKEN, thread, messages=[user("u1", "keep a note")])

    assert first.types[0] == "RUN_STARTED" and first.types[-1] == "RUN_FINISHED", first.types
    assert first.text() == PLAN, "the streamed reply arrives as text deltas"
    (start,) = first.of("TOOL_CALL_START")
    assert start["toolCallName"] == "write_file"
    assert json.loads("".join(e["delta"] for e in first.of("TOOL_CALL_ARGS")))["content"] == NOTE
    assert start["parentMessageId"] == first.of("TEXT_MESSAGE_START")[0]["messageId"]
    (interrupt,) = first.interrupts
    (row,) = await wait_pending(agui_settings.approvals_db, thread, 1)
    assert interrupt["id"] == row["request_id"] and interrupt["toolCallId"] == start["toolCallId"]
    assert interrupt["reason"] == "tool_approval" and interrupt["expiresAt"]
    assert interrupt["metadata"]["arguments"] == {"path": "notes.txt", "content": NOTE}
    assert interrupt["responseSchema"]["properties"]["decision"]["enum"] == ["allow", "deny", "edit"]
    assert first.ending["pendingInterrupts"] == [row["request_id"]], "the client holds the interrupt"
    assert first.of("STATE_SNAPSHOT")[-1]["snapshot"]["turnStatus"] == "awaiting_approval"
    assert notes(agui_settings) == [], "nothing is written while the person thinks"

    # The client sends its whole thread again with the answer: the old user message is not a new turn.
    resumed = await run_client(
        script, ui.url, TOKEN, thread, messages=[user("u1", "keep a note")], resume=[allow(interrupt["id"])]
    )
    assert resumed.finished["outcome"]["type"] == "success", resumed.events
    (result,) = resumed.of("TOOL_CALL_RESULT")
    assert result["toolCallId"] == start["toolCallId"]
    assert resumed.text().startswith("result: ")
    (note,) = notes(agui_settings)
    assert note.read_text() == NOTE, "written exactly once"
    assert approval_row(agui_settings.approvals_db, interrupt["id"])["decision"] == "allow"
    assert len(model.reply_requests) == 2, "one model call per step: the resent message started no turn"
    state = await wait_status(client, thread, "idle")
    assert [m.content for m in state.messages if m.role == "user"] == ["keep a note"]

    again = await run_client(script, ui.url, TOKEN, thread, messages=[], resume=[allow(interrupt["id"])])
    assert again.error["code"] == "ApprovalAlreadyResolved" and interrupt["id"] in again.error["message"]
    assert note.read_text() == NOTE and len(model.reply_requests) == 2


async def test_a_deny_reason_reaches_the_model(
    ui: ServedApp, script: Path, agui_settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    write_then_report(model)
    thread = histories.track(f"agui-deny-{uuid.uuid4().hex[:8]}")
    first = await run_client(script, ui.url, TOKEN, thread, messages=[user("u1", "keep a note")])
    (interrupt,) = first.interrupts
    denied = await run_client(
        script, ui.url, TOKEN, thread, messages=[], resume=[deny(interrupt["id"], "not on a Friday")]
    )
    assert denied.finished["outcome"]["type"] == "success", denied.events
    told = [m["content"] for m in model.reply_requests[-1]["messages"] if m["role"] == "tool"]
    assert any("not on a Friday" in str(content) for content in told), told
    assert notes(agui_settings) == []
    assert approval_row(agui_settings.approvals_db, interrupt["id"])["decision"] == "deny"


async def test_bad_resumes_end_in_run_error_and_decide_nothing(
    ui: ServedApp, script: Path, agui_settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    write_then_report(model)
    thread = histories.track(f"agui-bad-{uuid.uuid4().hex[:8]}")
    first = await run_client(script, ui.url, TOKEN, thread, messages=[user("u1", "keep a note")])
    (interrupt,) = first.interrupts

    unknown = await run_client(script, ui.url, TOKEN, thread, messages=[], resume=[allow("perm_nobody_call")])
    assert unknown.types == ["RUN_STARTED", "RUN_ERROR"]
    assert unknown.error["code"] == "UnknownApproval" and "perm_nobody_call" in unknown.error["message"]
    wrong = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"decision": "maybe"}}
    invalid = await run_client(script, ui.url, TOKEN, thread, messages=[], resume=[wrong])
    assert invalid.error["code"] == "InvalidResume" and "maybe" in invalid.error["message"]
    assert approval_row(agui_settings.approvals_db, interrupt["id"])["decision"] is None

    async with httpx.AsyncClient(base_url=ui.url) as http:
        refused = await http.post("/ag-ui", json={"threadId": thread, "runId": "r", "messages": []})
        garbage = await http.post("/ag-ui", content=b"{not json", headers={"Authorization": f"Bearer {TOKEN}"})
    assert refused.status_code == 401, "the same token as the API"
    assert garbage.status_code == 200 and '"code":"InvalidInput"' in garbage.text

    # A new run that answers nothing while the request waits: the same interrupt again.
    still = await run_client(script, ui.url, TOKEN, thread, messages=[])
    assert [i["id"] for i in still.interrupts] == [interrupt["id"]]


async def test_a_client_killed_mid_run_finds_the_same_interrupt_on_the_next_run(
    ui: ServedApp, script: Path, agui_settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    write_then_report(model)
    thread = histories.track(f"agui-killed-{uuid.uuid4().hex[:8]}")
    killed = await run_client(
        script, ui.url, TOKEN, thread, messages=[user("u1", "keep a note")], killOn="TEXT_MESSAGE_START"
    )
    assert killed.killed and "RUN_FINISHED" not in killed.types
    (row,) = await wait_pending(agui_settings.approvals_db, thread, 1)

    rejoined = await run_client(script, ui.url, TOKEN, thread, messages=[])
    assert [i["id"] for i in rejoined.interrupts] == [row["request_id"]]
    done = await run_client(script, ui.url, TOKEN, thread, messages=[], resume=[allow(row["request_id"])])
    assert done.finished["outcome"]["type"] == "success", done.events
    (note,) = notes(agui_settings)
    assert note.read_text() == NOTE
    assert len(model.reply_requests) == 2


async def test_every_waiting_request_is_an_interrupt_and_a_resume_must_answer_them_all(
    ui: ServedApp, script: Path, agui_settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(
                ("c_a", "write_file", {"path": "notes.txt", "content": "first draft\n"}),
                ("c_b", "write_file", {"path": "other.txt", "content": "not wanted\n"}),
            )
        return text_reply("done")

    model.behaviour = behave
    thread = histories.track(f"agui-two-{uuid.uuid4().hex[:8]}")
    first = await run_client(script, ui.url, TOKEN, thread, messages=[user("u1", "write two notes")])
    by_call = {i["toolCallId"]: i["id"] for i in first.interrupts}
    assert len(by_call) == 2, first.interrupts

    partial = await run_client(script, ui.url, TOKEN, thread, messages=[], resume=[allow(by_call["c_a"])])
    assert partial.error["code"] == "MissingResume" and by_call["c_b"] in partial.error["message"]
    assert approval_row(agui_settings.approvals_db, by_call["c_a"])["decision"] is None, "nothing decided"

    edit = {
        "interruptId": by_call["c_a"],
        "status": "resolved",
        "payload": {"decision": "edit", "arguments": {"path": "notes.txt", "content": NOTE}},
    }
    cancelled = {"interruptId": by_call["c_b"], "status": "cancelled"}
    done = await run_client(script, ui.url, TOKEN, thread, messages=[], resume=[edit, cancelled])
    assert done.finished["outcome"]["type"] == "success", done.events
    (note,) = notes(agui_settings)
    assert note.read_text() == NOTE, "the edited arguments ran"
    assert not [p for p in agui_settings.workspace_dir.rglob("other.txt") if p.is_file()], "cancelled: not run"
    assert approval_row(agui_settings.approvals_db, by_call["c_b"])["decision"] == "deny"
