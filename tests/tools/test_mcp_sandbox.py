"""Stdio MCP servers run in the tool sandbox: no secret of the worker, no project data, no network
unless their configuration opts in; and no sandbox that starts means the server never starts."""

from __future__ import annotations

import json
import shutil
import socketserver
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.ledger import Ledger
from activities.mcp_servers import McpServers
from activities.sandbox import SandboxPolicy
from activities.tool_sources import ToolSources
from activities.tools import ToolActivities
from activities.workspaces import workspace_for
from config.settings import Settings
from config.tools_section import McpServerConfig, ToolsConfig
from core.tool_run_model import ToolRequest
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import new_workspace, wait_status
from tests.support.mcp_support import with_config
from tests.support.processes import REPO_ROOT
from tests.support.scripts import ScriptedModel
from tests.tools.test_sandbox import LAUNCHERS, SECRET, failing_launchers, shell
from worker import build_worker

PROBE = REPO_ROOT / "tests" / "support" / "probe_mcp_server.py"
GREETING = "hello-from-the-host"


@pytest.fixture
def loopback_port() -> Iterator[int]:
    """A TCP port on the host's loopback that greets whoever connects, as a local service would."""

    class Greet(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(GREETING.encode())

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Greet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def probe_server(workspace: Path, **options: object) -> dict[str, object]:
    """The probe's configuration; its script is copied into the workspace, the checkout being hidden."""
    workspace.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROBE, workspace / PROBE.name)
    return {"command": sys.executable, "args": [PROBE.name], **options}


async def reach(servers: McpServers, variable: str, path: Path, port: int) -> dict[str, str]:
    tools, unavailable = await servers.list_all()
    assert unavailable == {}, unavailable
    tool = next(t for t in tools if t.remote_name == "reach")
    result = await servers.connection("probe").call(
        tool, {"variable": variable, "path": str(path), "port": port}, lambda: None
    )
    assert not result.is_error, result.content
    seen: dict[str, str] = json.loads(result.content)
    return seen


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_read_only_tree_is_visible_unwritable_and_its_hidden_parts_stay_covered(
    tmp_path: Path, launcher: str
) -> None:
    tree = tmp_path / "installation"
    (tree / "private").mkdir(parents=True)
    (tree / "lib.txt").write_text("library\n")
    (tree / "private" / "key").write_text(SECRET)
    policy = SandboxPolicy(launcher=launcher, readonly=(tree,), hidden=(tree / "private",))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    out = shell(workspace, f"cat {tree}/lib.txt; cat {tree}/private/key; touch {tree}/new", policy)

    assert "library" in out and SECRET not in out, out
    assert "Read-only file system" in out and not (tree / "new").exists()


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("network", [False, True])
async def test_a_stdio_server_sees_no_secret_no_data_and_the_network_only_when_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback_port: int, launcher: str, network: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    data = tmp_path / "data"
    data.mkdir()
    (data / "notes.txt").write_text(SECRET)
    settings = Settings(approvals_db=data / "approvals.db", workspace_dir=data / "workspace", tool_sandbox=launcher)
    shared = workspace_for(settings.workspace_dir, None)  # where a key-less connection runs
    config = McpServerConfig.model_validate(probe_server(shared, network=network, env={"GRANTED": "given"}))
    servers = McpServers({"probe": config}, settings.workspace_dir, settings.sandbox_policy())
    try:
        secret = await reach(servers, "OPENAI_API_KEY", data / "notes.txt", loopback_port)
        granted = await reach(servers, "GRANTED", shared / PROBE.name, loopback_port)
    finally:
        await servers.close()

    assert (shared / "started").exists(), "the server ran in the workspace"
    assert secret["variable"] == "(absent)" and secret["file"].startswith("unreadable"), secret
    assert granted["variable"] == "given" and "MCPServer" in granted["file"], "configured env and workspace reach it"
    if network:
        assert secret["connect"] == GREETING, secret
    else:
        assert secret["connect"].startswith("failed"), secret


async def test_no_sandbox_that_starts_means_the_server_never_starts_and_the_model_is_told(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    planned, ws = new_workspace(settings)
    settings = with_config(settings, tmp_path / "tools.toml", {}, {"probe": probe_server(ws)})
    monkeypatch.setenv("PATH", failing_launchers(tmp_path / "bin"))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "what can you reach?", planned))
        await wait_status(client, cid, "idle")

    assert not (ws / "started").exists(), "never started unsandboxed"
    [request] = model.reply_requests
    told = [m["content"] for m in request["messages"] if m["role"] == "system"]
    assert any("MCP server probe: SandboxUnavailable: the sandbox could not start" in str(t) for t in told), told
    assert not any(t["function"]["name"].startswith("mcp__probe") for t in request.get("tools", []))
    assert "MCP server probe: tools unavailable: SandboxUnavailable" in caplog.text


async def test_a_call_whose_server_cannot_start_sandboxed_is_not_run_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace"
    shared = workspace_for(workspace, None)  # the request below names no workspace
    sources = ToolSources(
        ToolsConfig(mcp_servers={"probe": McpServerConfig.model_validate(probe_server(shared))}),
        workspace,
        SandboxPolicy(),
    )
    ledger, projection = Ledger(tmp_path / "ledger.db"), ProjectionStore(tmp_path / "approvals.db")
    activities = ToolActivities(workspace, ledger, projection, sources)
    try:
        catalog = await sources.catalog()  # listed while a sandbox starts ...
        (tool,) = [t for t in catalog.tools if t.origin == "probe" and t.remote_name == "reach"]
        await sources.close()
        (shared / "started").unlink()
        monkeypatch.setenv("PATH", failing_launchers(tmp_path / "bin"))  # ... called when none does
        request = ToolRequest(
            conversation_id="c",
            turn_id="t",
            tool_call_id="call_1",
            request_id="r1",
            tool_name=tool.name,
            arguments={"variable": "HOME", "path": "x", "port": 1},
            tool=tool,
        )
        result = await ActivityEnvironment().run(activities.call_mcp_tool, request)
    finally:
        await sources.close()
        await ledger.close()
        await projection.close()

    assert result.is_error and result.content.startswith("Error: not run: the sandbox could not start"), result
    assert not (shared / "started").exists(), "the server was not started for the call"
