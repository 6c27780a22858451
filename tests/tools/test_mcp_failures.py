"""A stdio server that exits at start says why: the last lines of its stderr reach `starter.py
tools`, the conversation's system note and the worker log."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.mcp_servers import McpServers
from config.settings import Settings
from config.tools_section import McpServerConfig
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import wait_status
from tests.support.mcp_support import with_config
from tests.support.processes import REPO_ROOT, process_env
from tests.support.scripts import ScriptedModel
from tests.support.ui_fixtures import api_client
from worker import build_worker

MISSING = "a-package-nobody-installed"


def broken_node_server(tmp_path: Path) -> dict[str, Any]:
    """A node server whose dependency is not installed: node prints `Cannot find module` and exits."""
    package = tmp_path / "server"
    package.mkdir()
    (package / "package.json").write_text('{"name": "broken-server", "version": "1.0.0"}\n')
    (package / "index.js").write_text(f"console.error('starting up');\nrequire('{MISSING}');\n")
    return {"command": "node", "args": [str(package / "index.js")]}


async def test_the_listing_and_the_worker_log_carry_the_servers_last_words(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    config = McpServerConfig.model_validate(broken_node_server(tmp_path))
    servers = McpServers({"broken": config}, tmp_path / "workspace")
    try:
        tools, unavailable = await servers.list_all()
    finally:
        await servers.close()
    why = unavailable["MCP server broken"]
    assert tools == [] and f"Cannot find module '{MISSING}'" in why and "starting up" in why, why
    assert f"Cannot find module '{MISSING}'" in caplog.text


async def test_the_conversation_is_told_the_servers_last_words(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings = with_config(settings, tmp_path / "tools.toml", {}, {"broken": broken_node_server(tmp_path)})
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "what tools do you have?"))
        await wait_status(client, cid, "idle")
        card = (await http.get(f"/api/conversations/{cid}")).json()
    [request] = model.reply_requests
    told = [str(m["content"]) for m in request["messages"] if m["role"] == "system"]
    assert any("MCP server broken" in t and f"Cannot find module '{MISSING}'" in t for t in told), told
    # The inbox shows the same note (the system prompt itself stays hidden).
    notes = [m for m in card["messages"] if m["role"] == "system"]
    assert [m["name"] for m in notes] == ["tools_unavailable"], notes
    assert f"Cannot find module '{MISSING}'" in notes[0]["content"]


def test_starter_tools_shows_the_servers_last_words(
    env: WorkflowEnvironment, settings: Settings, tmp_path: Path
) -> None:
    settings = with_config(settings, tmp_path / "tools.toml", {}, {"broken": broken_node_server(tmp_path)})
    address = env.client.service_client.config.target_host
    done = subprocess.run(
        [sys.executable, "starter.py", "tools"],
        cwd=REPO_ROOT,
        env=process_env(settings, address),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "unavailable: MCP server broken" in done.stderr, done.stderr
    assert f"Cannot find module '{MISSING}'" in done.stderr, done.stderr
