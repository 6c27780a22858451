"""Reads stay reads: a repository the agent planted cannot make the git server run its commands.

The repository's own configuration names a program (fsmonitor, a filter, an external diff); an
allowed read of that repository must not start it.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.mcp_servers import McpServers
from activities.workspaces import workspace_for
from config.host_identity import HOST_ID_FILE
from config.settings import Settings
from config.tools_section import McpServerConfig
from doors.control import start_conversation
from tests.conftest import HistoryRecorder, binary
from tests.support.helpers import new_workspace, tool_messages, wait_status
from tests.support.mcp_support import GIT_IDENTITY, with_config
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.tools.test_sandbox import LAUNCHERS
from worker import build_worker

SERVER = {"command": binary("mcp-server-git"), "env": GIT_IDENTITY}


def planted_repository(workspace: Path, config: str, attributes: str | None = None) -> Path:
    """`git init -q sub` (as an approved run_shell would), then its config written as a file tool writes."""
    workspace.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "sub"], cwd=workspace, check=True, env={"PATH": "/usr/bin:/bin"})
    sub = workspace / "sub"
    (sub / "tracked.txt").write_text("one\n")
    for step in (["add", "tracked.txt"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *step], cwd=sub, check=True, env={"PATH": "/usr/bin:/bin", **GIT_IDENTITY})
    (sub / ".git" / "config").write_text((sub / ".git" / "config").read_text() + config)
    if attributes is not None:
        (sub / ".gitattributes").write_text(attributes)
    (sub / "tracked.txt").write_text("two\n")  # a change, so status and diff look at the file
    return sub


@pytest.mark.parametrize("launcher", LAUNCHERS)
async def test_an_allowed_git_status_of_a_planted_fsmonitor_runs_no_code(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
    launcher: str,
) -> None:
    planned, workspace = new_workspace(settings)
    planted_repository(workspace, "[core]\n\tfsmonitor = \"sh -c 'touch PWNED; echo'\"\n")
    settings = with_config(
        settings, tmp_path / "tools.toml", {"allow": ["mcp__git__git_status"]}, {"git": dict(SERVER)}
    )
    settings = replace(settings, tool_sandbox=launcher)
    model.behaviour = calls_then_summary(("c1", "mcp__git__git_status", {"repo_path": "sub"}))  # type: ignore[assignment]
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "what changed in sub?", planned))
        state = await wait_status(client, cid, "idle")

    (status,) = tool_messages(state)
    assert "tracked.txt" in status, status
    assert not list(workspace.rglob("PWNED")), "the repository's fsmonitor command ran"


@pytest.mark.parametrize(
    ("tool", "config", "attributes"),
    [
        ("git_status", '[filter "x"]\n\tclean = "sh -c \'touch PWNED; cat\'"\n', "* filter=x\n"),
        ("git_diff_unstaged", "[diff]\n\texternal = \"sh -c 'touch PWNED'\"\n", None),
        ("git_diff_unstaged", '[diff "y"]\n\ttextconv = "sh -c \'touch PWNED; cat\'"\n', "* diff=y\n"),
        ("git_diff_unstaged", '[diff "y"]\n\tcommand = "sh -c \'touch PWNED\'"\n', "* diff=y\n"),
    ],
)
async def test_no_repository_controlled_command_runs_on_a_read(
    tmp_path: Path, tool: str, config: str, attributes: str | None
) -> None:
    root = tmp_path / "workspace"
    workspace = workspace_for(root, None)  # where the key-less connection runs
    planted_repository(workspace, config, attributes)
    servers = McpServers({"git": McpServerConfig.model_validate(SERVER)}, root)
    try:
        tools, unavailable = await servers.list_all()
        assert unavailable == {}, unavailable
        found = next(t for t in tools if t.remote_name == tool)
        arguments: dict[str, object] = {"repo_path": "sub"}
        await servers.connection("git").call(found, arguments, lambda: None)
    finally:
        await servers.close()
    assert not list(workspace.rglob("PWNED")), f"{tool} ran the repository's command"


async def test_the_default_rules_deny_a_nested_git_config_write(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    planted = "[core]\n\tfsmonitor = \"sh -c 'touch PWNED; echo'\"\n"
    model.behaviour = calls_then_summary(  # type: ignore[assignment]
        ("c1", "write_file", {"path": "sub/.git/config", "content": planted}),
        ("c2", "write_file", {"path": "./a/b/.git/hooks/pre-commit", "content": "#!/bin/sh\ntouch PWNED\n"}),
    )
    async with build_worker(client, settings):  # no POLICY_FILE: the default rules
        cid = histories.track(await start_conversation(client, settings, "set up the repository"))
        state = await wait_status(client, cid, "idle")

    results = tool_messages(state)
    assert len(results) == 2 and all("a deny rule of the policy forbids" in r for r in results), results
    # The worker keeps its host's id there (config/host_identity.py); nothing else may be written.
    written = [p for p in settings.workspace_dir.rglob("*") if p.is_file() and p.name != HOST_ID_FILE]
    assert written == [], "a denied write touched the workspace"
