"""Brought tools as a user meets them: `tools`, `pending`, the demo model's `use`, the worker process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.workspaces import workspace_for
from tests.support.helpers import new_workspace
from tests.support.mcp_support import commit_count, git_repo, git_server, with_config
from tests.support.processes import DevServer
from tests.support.stack import Stack, make_stack


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("temporal")
    server = DevServer(tmp / "temporal.db", tmp / "temporal.log").start()
    yield server
    server.stop()


@pytest.fixture
def stack(tmp_path: Path, temporal: DevServer) -> Iterator[Stack]:
    system = make_stack(tmp_path, temporal.address)
    git_repo(workspace_for(system.settings.workspace_dir, None) / "repo")  # for `tools`, which names no workspace
    rules = {
        "allow": ["list_dir", "read_file", "mcp__git__git_status", "forecast"],
        "ask": ["mcp__git__*"],
        "deny": ["mcp__git__git_reset"],
        "python_tools": ["examples.weather_tools"],
    }
    # The repository named relative to the workspace each instance of the server runs in.
    # A loaded machine can take longer than the default 15 s to start the server in its sandbox.
    git = {**git_server(Path("repo")), "list_timeout_seconds": 60}
    configured = with_config(system.settings, tmp_path / "tools.toml", rules, {"git": git})
    system.env["POLICY_FILE"] = str(configured.policy_file)
    yield system
    system.stop()


def test_tools_lists_every_source_with_its_rule(stack: Stack) -> None:
    listing = json.loads(stack.cli_ok("tools", "--json").stdout)
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert listing["unavailable"] == {}
    assert (tools["write_file"]["source"], tools["write_file"]["verdict"]) == ("builtin", "ask")
    assert tools["forecast"]["source"] == "python" and tools["forecast"]["origin"] == "examples.weather_tools"
    assert (tools["forecast"]["verdict"], tools["report_weather"]["permission_type"]) == ("allow", "write")
    status = tools["mcp__git__git_status"]
    assert (status["source"], status["origin"], status["permission_type"]) == ("mcp", "git", "read")
    assert status["annotations"]["readOnlyHint"] is True
    # Ask beats allow: the glob ask keeps even the allowed status asked; the deny wins over both.
    assert status["verdict"] == "ask" and status["rules"] == ["ask: mcp__git__*", "allow: mcp__git__git_status"]
    assert tools["mcp__git__git_reset"]["verdict"] == "deny"
    table = stack.cli_ok("tools").stdout
    assert "python examples.weather_tools" in table and "mcp git" in table and "read-only" in table


def test_the_demo_model_uses_a_python_tool_and_pending_shows_its_source(stack: Stack) -> None:
    stack.start_worker()
    request = 'use report_weather {"city": "Oslo", "observation": "sunny"}'
    conversation_id = stack.cli_ok("start", request).stdout.strip()
    [row] = stack.wait_pending(conversation_id, 1)
    assert row["tool_name"] == "report_weather" and row["tool"]["source"] == "python"
    assert "python examples.weather_tools" in stack.cli_ok("pending").stdout
    stack.cli_ok("approve", row["request_id"], "--as", "alice")
    stack.wait_status(conversation_id, "idle")

    stack.cli_ok("send", conversation_id, 'use forecast {"city": "Oslo"}')
    state = stack.wait_status(conversation_id, "idle")
    results = [m["content"] for m in state["messages"] if m["role"] == "tool"]
    assert results == ['{"city": "Oslo", "recorded": "sunny"}', "Oslo, next 1 day(s): sunny"]
    assert stack.pending(conversation_id) == []


def test_the_demo_model_calls_an_mcp_tool_by_name(stack: Stack) -> None:
    stack.start_worker()
    planned, workspace = new_workspace(stack.settings)
    repo = git_repo(workspace / "repo")
    request = "use mcp__git__git_commit " + json.dumps({"repo_path": str(repo), "message": "from the demo"})
    conversation_id = stack.cli_ok("start", "--id", planned, request).stdout.strip()
    [row] = stack.wait_pending(conversation_id, 1)
    assert row["tool"] == {
        "source": "mcp",
        "origin": "git",
        "changed": False,
        "annotations": {
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
            "readOnlyHint": False,
        },
    }
    stack.cli_ok("approve", row["request_id"])
    state = stack.wait_status(conversation_id, "idle")
    assert commit_count(repo) == 2
    assert "Changes committed successfully" in state["messages"][-1]["content"]
