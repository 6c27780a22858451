"""MCP servers from a virtual environment whose base interpreter lives outside it (issue 49): a venv
built on a pyenv Python in a 0700 home directory starts in the sandbox, with each launcher, whether
the worker runs as root or as uid 65534: `starter.py tools` lists its tools, and a call runs on the
base's own standard library. A base the worker's user cannot reach is refused in one line that
names the directory in the way, and its server never starts."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities import sandbox
from activities.mcp_launch import stdio_parameters
from activities.mcp_python import python_installation
from activities.sandbox import SandboxOutOfReach, SandboxPolicy
from activities.sandbox_identity import worker_is_root
from config.sandbox_section import NOBODY
from config.settings import Settings
from config.tools_section import McpServerConfig
from core.conversation_model import ConversationState
from demo_model.server import text_reply, tool_reply
from doors.control import start_conversation
from tests.support.helpers import tool_messages, wait_status, workspace_of
from tests.support.mcp_support import with_config
from tests.support.processes import REPO_ROOT, WorkerProcess, process_env, run_cli
from tests.support.pyenv_layout import VERSION, VenvServer, pyenv_python, venv_server, worker_venv
from tests.support.scripts import Behaviour, ScriptedModel
from tests.tools.test_sandbox import LAUNCHERS
from worker import build_worker

TOOL = "mcp__pyenv__where"
RULES = {"allow": [TOOL]}
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


@dataclass(frozen=True)
class Layout:
    top: Path  # 0755: every user passes it
    worker_home: Path  # uid 65534's, 0700: its pyenv, its server's venv, its worker's venv
    server: VenvServer  # built on the pyenv under worker_home
    admins_server: VenvServer  # in a shared directory, built on a pyenv under a 0700 home of root's
    worker_python: Path  # uid 65534's worker: a venv on its pyenv that sees this test's packages

    def servers(self) -> dict[str, dict[str, object]]:
        # A loaded machine can take longer than the default 15 s to start a server in its sandbox.
        return {
            "pyenv": self.server.config(list_timeout_seconds=60),
            "adminenv": self.admins_server.config(list_timeout_seconds=60),
        }


@pytest.fixture(scope="module")
def layout() -> Iterator[Layout]:
    if not worker_is_root():
        pytest.fail("run as root: this module starts the unprivileged worker itself")
    top = Path(tempfile.mkdtemp(prefix="venv-base-"))
    top.chmod(0o755)
    try:
        home = top / "home" / "worker"
        prefix = pyenv_python(home, NOBODY)
        admin = pyenv_python(top / "home" / "admin", 0)
        yield Layout(
            top=top,
            worker_home=home,
            server=venv_server(home / "project" / ".venv", prefix / "bin" / "python3", NOBODY),
            admins_server=venv_server(top / "shared" / ".venv", admin / "bin" / "python3", 0),
            worker_python=worker_venv(home / "worker" / ".venv", prefix / "bin" / "python3", NOBODY),
        )
    finally:
        shutil.rmtree(top, ignore_errors=True)


def call_where_once(note: str) -> Behaviour:
    """The model calls the server's tool once, then reports; a system note after the user's message
    (an unavailable server's) does not make it skip the call."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if any(m["role"] == "tool" for m in messages):
            return text_reply("done")
        return tool_reply(("c1", TOOL, {"note": note}))

    return behave


def ran_once_on_its_base(content: str, server: VenvServer, notes: Path, note: str) -> None:
    """The call's report: the venv's python on the base's own standard library (not the system's);
    its one note written by uid 65534 as the host sees it (inside, unshare's user namespace is root)."""
    seen = json.loads(content)
    assert seen["prefix"] == str(server.venv) and seen["base_prefix"] == str(server.base_prefix), seen
    assert seen["stdlib"] == str(server.base_prefix / "lib" / f"python{VERSION}"), seen
    assert notes.read_text() == f"{note}\n" and notes.stat().st_uid == NOBODY


async def converse(client: Client, settings: Settings) -> tuple[ConversationState, Path]:
    """One conversation whose model calls the server's tool once; its end state and notes file."""
    conversation_id = await start_conversation(client, settings, "where do you run?")
    state = await wait_status(client, conversation_id, "idle", timeout=90, tool_results=1)
    return state, workspace_of(settings, conversation_id) / "notes.txt"


@pytest.mark.parametrize("launcher", LAUNCHERS)
async def test_a_root_worker_lists_and_calls_a_server_on_a_pyenv_base(
    client: Client, settings: Settings, model: ScriptedModel, layout: Layout, tmp_path: Path, launcher: str
) -> None:
    settings = replace(with_config(settings, tmp_path / "tools.toml", RULES, layout.servers()), tool_sandbox=launcher)
    note = f"root {launcher}"
    model.behaviour = call_where_once(note)
    async with build_worker(client, settings):  # the listing's process runs while the worker calls
        listed, (state, notes) = await asyncio.gather(
            run_cli(settings, client, "tools", "--json", env_extra={"TOOL_SANDBOX": launcher}),
            converse(client, settings),
        )

    assert listed.returncode == 0, listed.stderr
    listing = json.loads(listed.stdout)
    assert listing["unavailable"] == {}, listing["unavailable"]  # root reaches both homes
    assert {TOOL, "mcp__adminenv__where"} <= {tool["name"] for tool in listing["tools"]}
    [content] = tool_messages(state)
    ran_once_on_its_base(content, layout.server, notes, note)


@pytest.mark.parametrize("launcher", LAUNCHERS)
async def test_a_worker_running_as_uid_65534_lists_and_calls_a_server_on_a_pyenv_in_its_home(
    client: Client, model: ScriptedModel, layout: Layout, launcher: str
) -> None:
    assert model.server is not None
    data = layout.top / f"data-{launcher}-{uuid.uuid4().hex[:6]}"  # its parents are root's, not 0700
    data.mkdir()
    os.chown(data, NOBODY, NOBODY)
    settings = Settings(
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=data / "approvals.db",
        workspace_dir=data / "workspace",
        payload_store=str(data / "payloads"),
        openai_base_url=model.server.base_url,
        openai_api_key="test-key",
        llm_model="scripted-test",
        approval_timeout=3600.0,
        tool_sandbox=launcher,
    )
    settings = with_config(settings, layout.top / f"tools-{data.name}.toml", RULES, layout.servers())
    env = process_env(
        settings,
        client.service_client.config.target_host,
        TOOL_SANDBOX=launcher,
        HOME=str(layout.worker_home),
        PATH="/usr/bin:/bin",
        PYTHONDONTWRITEBYTECODE="1",
    )
    note = f"uid {NOBODY} {launcher}"
    model.behaviour = call_where_once(note)
    log = data.parent / f"worker-{data.name}.log"
    worker = WorkerProcess(env, log, command_prefix=AS_NOBODY, python=str(layout.worker_python)).start()
    try:  # the listing runs while the worker starts
        listed = await asyncio.to_thread(
            subprocess.run,
            [*AS_NOBODY, str(layout.worker_python), "starter.py", "tools"],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        worker.wait_ready(timeout=90)
        state, notes = await converse(client, settings)
    finally:
        worker.stop()

    assert listed.returncode == 0, listed.stderr
    assert TOOL in listed.stdout and "mcp pyenv" in listed.stdout, listed.stdout
    # The server on root's pyenv: one line naming the directory uid 65534 may not pass.
    admin = layout.top / "home" / "admin"
    refusal = (
        f"MCP server adminenv: SandboxOutOfReach: {layout.admins_server.base_prefix / 'bin'} cannot be shown in the "
        f"sandbox: uid {NOBODY}, the worker's user, builds it and may not pass {admin} (mode 0700, owner uid 0); "
        f"let it through (setfacl -m u:{NOBODY}:x {admin}) or install what the tool runs where uid {NOBODY} "
        "can reach it"
    )
    assert [line for line in listed.stderr.splitlines() if line.startswith("unavailable:")] == [
        f"unavailable: {refusal}"
    ], listed.stderr
    told = [m.content or "" for m in state.messages if m.role == "system"]
    assert any(refusal in text for text in told), told  # the model hears why that server's tools are missing
    assert len(tool_messages(state)) == 1, log.read_text(errors="replace")[-4000:]
    [content] = tool_messages(state)
    ran_once_on_its_base(content, layout.server, notes, note)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_root_worker_that_drops_first_names_the_home_its_sandbox_uid_cannot_pass(
    monkeypatch: pytest.MonkeyPatch, layout: Layout, launcher: str
) -> None:
    """As in a container without CAP_SYS_ADMIN: the sandbox uid builds the view, so the base under
    root's 0700 home is out of its reach, said before anything starts."""
    monkeypatch.setattr(sandbox, "ROOT_MODES", ("dropped",))
    workspace = layout.top / f"dropped-{launcher}-{uuid.uuid4().hex[:6]}"
    workspace.mkdir()
    config = McpServerConfig.model_validate(layout.admins_server.config())
    with pytest.raises(SandboxOutOfReach) as refused:
        stdio_parameters(config, workspace, SandboxPolicy(launcher=launcher))
    admin = layout.top / "home" / "admin"
    assert f"uid {NOBODY}, the sandbox uid, builds it and may not pass {admin} (mode 0700, owner uid 0)" in str(
        refused.value
    )
    assert "\n" not in str(refused.value)


def test_a_venvs_script_or_a_base_by_its_path_brings_the_base_and_nothing_more_of_the_home(layout: Layout) -> None:
    base, venv = layout.server.base_prefix, layout.server.venv
    script = venv / "bin" / "stdlib-probe"  # a console script, as pip writes one
    script.write_text(f"#!{venv / 'bin' / 'python'}\nfrom stdlib_mcp_server import main\nmain()\n")
    script.chmod(0o755)

    assert set(python_installation(script)) == {venv, venv / "bin", venv / "lib", base / "bin", base / "lib"}
    assert set(python_installation(base / "bin" / f"python{VERSION}")) == {base / "bin", base / "lib"}
    assert python_installation(Path("/bin/sh")) == []
