"""The worker's stdio MCP servers without Temporal: started on demand, reused, restarted, stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from activities import mcp_connection
from activities.mcp_launch import stdio_parameters
from activities.mcp_servers import McpServers
from activities.workspaces import workspace_for
from config.tools_section import McpServerConfig
from tests.support.mcp_support import git_processes, git_repo, git_server


async def test_a_stdio_server_starts_on_demand_is_reused_restarted_and_stopped(tmp_path: Path) -> None:
    repo = git_repo(workspace_for(tmp_path, None) / "repo")  # where the key-less connection runs
    servers = McpServers({"git": McpServerConfig(**git_server(repo))}, tmp_path)
    connection = servers.connection("git")
    assert git_processes() == [], "nothing starts before it is needed"
    try:
        tools, unavailable = await servers.list_all()
        status = next(tool for tool in tools if tool.name == "mcp__git__git_status")
        assert unavailable == {}
        (first,) = git_processes()
        for _ in range(3):
            result = await connection.call(status, {"repo_path": str(repo)}, lambda: None)
            assert "notes.txt" in result.content
        assert [p.pid for p in git_processes()] == [first.pid], "every call reused the one server"

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        # The call that meets the dead server fails (Temporal retries the activity); the next starts a new one.
        with contextlib.suppress(Exception):
            await connection.call(status, {"repo_path": str(repo)}, lambda: None)
        result = await connection.call(status, {"repo_path": str(repo)}, lambda: None)
        assert "notes.txt" in result.content
        (second,) = git_processes()
        assert second.pid != first.pid
    finally:
        await servers.close()
    assert git_processes() == [], "closing (the worker stopping) stops the server"


async def test_a_server_that_does_not_answer_in_time_is_unavailable_for_the_listing() -> None:
    release = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)  # takes the request, answers nothing until the test ends
        await release.wait()
        writer.close()

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    config = McpServerConfig(url=f"http://127.0.0.1:{port}/mcp", list_timeout_seconds=1)
    servers = McpServers({"slow": config}, Path("."))
    try:
        tools, unavailable = await servers.list_all()
    finally:
        release.set()
        await servers.close()
        silent.close()
        await silent.wait_closed()
    assert tools == [] and unavailable == {"MCP server slow": "no answer in time"}


async def test_a_stdio_servers_launch_is_worked_out_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Working out a launch reads the server's installation and may start the sandbox's launchers
    to probe them: a worker's other activities and heartbeats must not wait for it."""
    loop_thread = threading.get_ident()
    worked_out_on: list[int] = []

    def recorded(*args: Any) -> Any:
        worked_out_on.append(threading.get_ident())
        return stdio_parameters(*args)

    monkeypatch.setattr(mcp_connection, "stdio_parameters", recorded)
    repo = git_repo(workspace_for(tmp_path, None) / "repo")
    servers = McpServers({"git": McpServerConfig(**git_server(repo))}, tmp_path)
    try:
        tools, unavailable = await servers.list_all()
    finally:
        await servers.close()
    assert unavailable == {} and any(tool.name == "mcp__git__git_status" for tool in tools)
    assert len(worked_out_on) == 1 and worked_out_on[0] != loop_thread
