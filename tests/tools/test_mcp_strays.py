"""A call's processes do not outlive it: a stdio server left with a process a call started is
restarted, and that process ends (checked over the whole host)."""

from __future__ import annotations

import random
from pathlib import Path

import psutil
import pytest

from activities.mcp_servers import McpServers
from activities.sandbox import SandboxPolicy
from activities.workspaces import workspace_for
from config.tools_section import McpServerConfig
from tests.tools.test_mcp_sandbox import probe_server
from tests.tools.test_sandbox import LAUNCHERS


def sleeping(seconds: str) -> list[psutil.Process]:
    """Every process on the host running `sleep SECONDS`."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if process.info["cmdline"] == ["sleep", seconds]:
            found.append(process)
    return found


@pytest.mark.parametrize("launcher", [*LAUNCHERS, "off"])
async def test_a_background_process_a_call_started_does_not_survive_the_call(tmp_path: Path, launcher: str) -> None:
    workspace = tmp_path / "workspace"
    seconds = f"300.{random.randrange(10**8):08d}"  # this test's own sleep, unlike any other on the host
    config = McpServerConfig.model_validate(probe_server(workspace_for(workspace, None)))  # key-less calls
    policy = SandboxPolicy(enabled=False) if launcher == "off" else SandboxPolicy(launcher=launcher)
    servers = McpServers({"probe": config}, workspace, policy)
    try:
        tools, unavailable = await servers.list_all()
        assert unavailable == {}, unavailable
        linger = next(t for t in tools if t.remote_name == "linger")
        result = await servers.connection("probe").call(linger, {"seconds": seconds}, lambda: None)
        assert result.content.startswith("started "), result.content
        assert sleeping(seconds) == [], "the background sleep outlived the call"
        again = await servers.connection("probe").call(linger, {"seconds": seconds + "1"}, lambda: None)
        assert again.content.startswith("started "), "the restarted server answers the next call"
    finally:
        await servers.close()
        for process in sleeping(seconds) + sleeping(seconds + "1"):
            process.kill()
    assert sleeping(seconds + "1") == []
