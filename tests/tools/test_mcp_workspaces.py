"""One instance of a stdio server per workspace: a conversation's server works in its own
workspace and cannot read another's; instances are capped (least recently used closed first) and
closed when idle; the listing is kept, so listing for a new workspace starts nothing."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from activities.mcp_servers import McpServers
from activities.sandbox import SandboxPolicy
from activities.workspaces import workspace_for
from config.tools_section import McpServerConfig
from tests.support.processes import REPO_ROOT
from tests.tools.test_sandbox import LAUNCHERS, SECRET

PROBE = REPO_ROOT / "tests" / "support" / "probe_mcp_server.py"


def shared_probe(tmp_path: Path) -> McpServerConfig:
    """The probe outside every workspace, made visible through the server's `readonly` paths."""
    installed = tmp_path / "probe-install"
    installed.mkdir()
    shutil.copy(PROBE, installed / PROBE.name)
    return McpServerConfig(command=sys.executable, args=[str(installed / PROBE.name)], readonly=[str(installed)])


async def read_through(servers: McpServers, key: str, path: Path) -> str:
    tools, unavailable = await servers.list_all(key)
    assert unavailable == {}, unavailable
    reach = next(t for t in tools if t.remote_name == "reach")
    result = await servers.connection("probe", key).call(
        reach, {"variable": "HOME", "path": str(path), "port": 1}, lambda: None
    )
    seen: dict[str, str] = json.loads(result.content)
    return seen["file"]


@pytest.mark.parametrize("launcher", LAUNCHERS)
async def test_each_workspace_gets_its_own_server_that_sees_only_its_files(tmp_path: Path, launcher: str) -> None:
    root = tmp_path / "workspaces"
    mine, theirs = workspace_for(root, "conv-a"), workspace_for(root, "conv-b")
    for workspace, text in ((mine, "mine"), (theirs, SECRET)):
        workspace.mkdir(parents=True)
        (workspace / "notes.txt").write_text(text)
    servers = McpServers({"probe": shared_probe(tmp_path)}, root, SandboxPolicy(launcher=launcher))
    try:
        own = await read_through(servers, "conv-a", mine / "notes.txt")
        other = await read_through(servers, "conv-a", theirs / "notes.txt")
        relative = await read_through(servers, "conv-b", Path("notes.txt"))
        running = {c.workspace for c in servers.running()}
    finally:
        await servers.close()
    assert own == "mine" and other.startswith("unreadable"), (own, other)
    assert relative == SECRET, "conv-b's server runs in conv-b's workspace"
    assert running == {mine, theirs}
    assert (mine / "started").exists() and (theirs / "started").exists()
    assert not (root / "started").exists(), "no server ran in the shared top-level directory"


async def test_instances_are_capped_closed_when_idle_and_listing_starts_none(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    servers = McpServers({"probe": shared_probe(tmp_path)}, root, max_running=2, idle_seconds=3600)
    try:
        for key in ("a", "b", "c"):
            await read_through(servers, key, Path("x"))
        kept = sorted(c.workspace.name for c in servers.running())
        tools, _ = await servers.list_all("d")
        after_listing = len(servers.running())
        await servers.close_idle()
        not_idle = len(servers.running())
        servers.idle_seconds = 0
        await servers.close_idle()
        idle = servers.running()
    finally:
        await servers.close()
    assert kept == ["b", "c"], "the least recently used instance was closed"
    assert tools and after_listing == 2, "a listing for a new workspace used the kept definitions"
    assert not_idle == 2 and idle == []
