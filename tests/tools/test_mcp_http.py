"""A streamable-HTTP MCP server (written here on the `mcp` SDK): changed tools, errors, outages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.failure_support import holds, replay_recorded, wait_turn, worker_process
from tests.support.helpers import pending_rows, rows, tool_messages, wait_pending, wait_status
from tests.support.mcp_support import HttpMcpServer, with_config
from tests.support.scripts import ScriptedModel, calls_then_summary, last_role
from worker import build_worker


@pytest.fixture
def server(tmp_path: Path) -> Any:
    started = HttpMcpServer(tmp_path / "mcp").start()
    yield started
    started.kill()


def configured(settings: Settings, tmp_path: Path, server: HttpMcpServer, **rules: Any) -> Settings:
    return with_config(settings, tmp_path / "tools.toml", rules, {"t": {"url": server.url, "timeout_seconds": 20}})


def stamp_each_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "tool":
        return text_reply("done")
    return tool_reply(("c1", "mcp__t__stamp", {"label": str(messages[-1]["content"])}))


def approvals(settings: Settings, cid: str) -> list[dict[str, Any]]:
    sql = "SELECT * FROM ui_pending_approvals WHERE conversation_id = ? ORDER BY created_at"
    return rows(settings.approvals_db, sql, cid)


async def decide(client: Client, settings: Settings, request_id: str, decision: str) -> None:
    await send_decision(client, settings, DecisionInput(request_id=request_id, decision=decision, decided_by="ann"))  # type: ignore[arg-type]


async def test_a_tool_whose_description_changed_is_asked_again_under_always_allow(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    server: HttpMcpServer,
    tmp_path: Path,
    histories: HistoryRecorder,
) -> None:
    settings = configured(settings, tmp_path, server)
    model.behaviour = stamp_each_message
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "one"))
        (first,) = await wait_pending(settings.approvals_db, cid, 1)
        await decide(client, settings, first["request_id"], "always_allow")
        await wait_status(client, cid, "idle")
        await send_message(client, cid, "two")
        await wait_status(client, cid, "idle")
        assert len(approvals(settings, cid)) == 1, "the unchanged tool ran under always-allow"

        server.set_description("Stamp a label. Also sends the label to the billing system.")
        await send_message(client, cid, "three")
        (again,) = await wait_pending(settings.approvals_db, cid, 1)
        assert server.calls() == ["stamp one", "stamp two"], "the changed tool waits for a person"
        details = json.loads(again["details_json"])
        assert details["tool"]["changed"] is True and details["tool"]["source"] == "mcp"
        assert details["tool"]["origin"] == "t" and details["tool"]["annotations"]["readOnlyHint"] is False
        await decide(client, settings, again["request_id"], "allow")
        state = await wait_status(client, cid, "idle")

    assert server.calls() == ["stamp one", "stamp two", "stamp three"]
    assert tool_messages(state) == ["stamped one", "stamped two", "stamped three"]


async def test_schema_errors_and_tool_errors_reach_the_model_and_nobody_is_asked(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    server: HttpMcpServer,
    tmp_path: Path,
    histories: HistoryRecorder,
) -> None:
    servers = {"t": {"url": server.url, "headers": {"Authorization": "Bearer t0ken"}}}
    settings = with_config(settings, tmp_path / "tools.toml", {"allow": ["mcp__t__lookup"]}, servers)
    model.behaviour = calls_then_summary(
        ("c_type", "mcp__t__stamp", {"label": 5}),
        ("c_missing", "mcp__t__stamp", {}),
        ("c_extra", "mcp__t__stamp", {"label": "x", "colour": "red"}),
        ("c_error", "mcp__t__lookup", {"key": "nope"}),
        ("c_ok", "mcp__t__lookup", {"key": "known"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "misuse the tools"))
        state = await wait_status(client, cid, "idle")

    results = dict(zip([m.tool_call_id for m in state.messages if m.role == "tool"], tool_messages(state), strict=True))
    assert "5 is not of type 'string'" in results["c_type"]
    assert "missing required argument(s): label" in results["c_missing"]
    assert "unexpected argument(s): colour" in results["c_extra"]
    assert results["c_error"].startswith("Error from the tool") and "no such key: nope" in results["c_error"]
    assert results["c_ok"] == "found it"
    assert approvals(settings, cid) == [] and server.calls() == []
    headers = (server.state_dir / "headers.log").read_text().splitlines()
    assert headers and set(headers) == {"Bearer t0ken"}, "the configured headers go with every request"


async def test_a_server_that_is_down_leaves_its_tools_out_and_the_turn_goes_on(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    server: HttpMcpServer,
    tmp_path: Path,
    histories: HistoryRecorder,
) -> None:
    settings = configured(settings, tmp_path, server)
    server.kill()
    model.behaviour = lambda messages: text_reply("no stamping today")
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "stamp something"))
        state = await wait_status(client, cid, "idle")

    offered = [tool["function"]["name"] for tool in model.requests[0]["tools"]]
    assert "read_file" in offered and not [name for name in offered if name.startswith("mcp__t__")]
    notes = [m.content or "" for m in state.messages if m.role == "system"]
    assert any("MCP server t" in note and "unavailable" in note for note in notes)
    assert state.messages[-1].content == "no stamping today"


async def test_a_server_killed_mid_call_runs_the_call_at_most_once(
    client: Client, settings: Settings, model: ScriptedModel, server: HttpMcpServer, tmp_path: Path
) -> None:
    settings = configured(settings, tmp_path, server)
    model.behaviour = calls_then_summary(("c1", "mcp__t__slow_stamp", {"label": "slow", "seconds": 60}))
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "stamp slowly")
        (pending,) = await wait_pending(settings.approvals_db, cid, 1)
        await decide(client, settings, pending["request_id"], "allow")
        await holds(lambda: server.calls() == ["start slow"])
        server.kill()
        server.start()  # the same port and state; the fixture stops this process too
        state = await wait_status(client, cid, "idle", timeout=90)

    assert server.calls() == ["start slow"], "the call was not sent again"
    (result,) = tool_messages(state)
    assert result.startswith("Outcome unknown") and "NOT run again" in result
    assert pending_rows(settings.approvals_db, cid) == []
    assert await replay_recorded(client, [cid], "mcp-killed-server") == 1


async def test_a_worker_killed_during_an_approved_mcp_call_runs_it_at_most_once(
    client: Client, settings: Settings, model: ScriptedModel, server: HttpMcpServer, tmp_path: Path
) -> None:
    settings = configured(settings, tmp_path, server)
    model.behaviour = calls_then_summary(("c1", "mcp__t__slow_stamp", {"label": "w", "seconds": 3}))
    cid = await start_conversation(client, settings, "stamp during a crash")
    with worker_process(settings, client, tmp_path / "worker1.log") as worker:
        (pending,) = await wait_pending(settings.approvals_db, cid, 1, timeout=60)
        await decide(client, settings, pending["request_id"], "allow")
        await holds(lambda: server.calls() == ["start w"])
        worker.kill()
    with worker_process(settings, client, tmp_path / "worker2.log"):
        state = await wait_turn(client, cid, "idle")
    # The server may finish or drop the orphaned call; it never receives it a second time.
    assert [call for call in server.calls() if call.startswith("start")] == ["start w"]
    (result,) = tool_messages(state)
    assert result.startswith("Outcome unknown")
    assert await replay_recorded(client, [cid], "mcp-killed-worker") == 1
