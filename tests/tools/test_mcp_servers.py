"""The worker's stdio MCP servers without Temporal: started on demand, reused, restarted, stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

from activities.mcp_servers import McpServers
from activities.workspaces import workspace_for
from config.tools_section import McpServerConfig
from tests.mcp_support import git_processes, git_repo, git_server


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
