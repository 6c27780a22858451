"""The sandbox run_shell runs in: what a command can and cannot reach, with each launcher; network
only for calls a network rule covers; and no launcher that starts means no run."""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from activities import sandbox
from activities.builtin_tools import KvStore, Workspace
from activities.sandbox import SandboxPolicy, SandboxUnavailable, sandboxed_launch
from activities.sandbox_identity import worker_is_root
from config.settings import ConfigError, Settings
from core.builtin.run_shell import run as run_shell
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.processes import REPO_ROOT
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

# unshare comes with util-linux everywhere; bubblewrap is a package (CI installs it and sets REQUIRE_BWRAP).
LAUNCHERS = [
    "unshare",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(
            shutil.which("bwrap") is None and not os.environ.get("REQUIRE_BWRAP"),
            reason="bubblewrap is not installed (apt-get install bubblewrap)",
        ),
    ),
]
SECRET = "s3cret-value-0f-the-worker"


def shell(workspace: Path, command: str, policy: SandboxPolicy) -> str:
    return asyncio.run(run_shell(Workspace(workspace, policy), KvStore({}), {"command": command}, lambda: None))


@pytest.fixture
def loopback_server() -> Iterator[str]:
    """An HTTP server on the host's loopback, as the approvals UI or Temporal would be."""

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reached-the-host")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def failing_launchers(directory: Path) -> str:
    """A PATH whose bwrap and unshare exist but cannot create namespaces, as in a locked-down container."""
    directory.mkdir()
    for name in ("bwrap", "unshare"):
        fake = directory / name
        refusal = f"{name}: creating new namespace failed: Operation not permitted"
        fake.write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
        fake.chmod(0o755)
    return str(directory)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_the_environment_is_an_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launcher: str) -> None:
    for name in ("UI_TOKEN", "OPENAI_API_KEY", "TEMPORAL_ADDRESS", "APPROVALS_DB", "MY_TOOL_SETTING"):
        monkeypatch.setenv(name, f"{SECRET}-{name}")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    policy = SandboxPolicy(launcher=launcher, env=("MY_TOOL_SETTING",))
    # Every process of the sandbox, the launcher's own included, is searched for the secret.
    out = shell(tmp_path, "env; echo ---; cat /proc/[0-9]*/environ | tr '\\0' '\\n'", policy)

    assert out.startswith("exit code 0\n"), out
    assert SECRET + "-UI_TOKEN" not in out and SECRET + "-OPENAI_API_KEY" not in out
    assert SECRET + "-TEMPORAL_ADDRESS" not in out and SECRET + "-APPROVALS_DB" not in out
    assert f"MY_TOOL_SETTING={SECRET}-MY_TOOL_SETTING" in out and "LC_ALL=C.UTF-8" in out
    assert "HOME=/tmp\n" in out and f"HOME={os.environ.get('HOME')}\n" not in out


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_project_data_config_and_checkout_are_unreadable_the_workspace_is_writable(
    tmp_path: Path, launcher: str
) -> None:
    data, config = tmp_path / "data", tmp_path / "config"
    (data / "workspace" / ".secrets").mkdir(parents=True)
    config.mkdir()
    (data / "approvals.db").write_text(SECRET)
    (data / "workspace" / ".secrets" / "token").write_text(SECRET)
    (config / "policy.toml").write_text(f'# {SECRET}\nallow = ["read_file"]\n')
    settings = Settings(
        approvals_db=data / "approvals.db",
        workspace_dir=data / "workspace",
        policy_file=str(config / "policy.toml"),
        tool_sandbox=launcher,
    )
    policy = settings.sandbox_policy()
    policy = replace(policy, hidden=(*policy.hidden, data / "workspace" / ".secrets"))
    hidden = data / "workspace" / ".secrets"
    reads = [data / "approvals.db", config / "policy.toml", REPO_ROOT / "pyproject.toml", hidden / "token"]
    # Root inside tries to undo the hiding before reading again.
    undo = [f"umount {hidden}", f"cat {hidden / 'token'}"]
    writes = ["echo made > made.txt", "cat made.txt", "touch /usr/escape"]
    command = " ; ".join([*(f"cat {p}" for p in reads), *undo, f"ls {REPO_ROOT}", *writes])
    out = shell(data / "workspace", command, policy)

    assert SECRET not in out, out
    assert "allow = " not in out and "durable-approvals" not in out
    assert (data / "workspace" / "made.txt").read_text() == "made\n" and "made\n" in out
    assert not Path("/usr/escape").exists() and "Read-only file system" in out


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_network_is_off_unless_the_policy_opts_in(tmp_path: Path, loopback_server: str, launcher: str) -> None:
    command = f"curl -sS -m 5 {loopback_server}"
    closed = shell(tmp_path, command, SandboxPolicy(launcher=launcher))
    opened = shell(tmp_path, command, SandboxPolicy(launcher=launcher, network=True))

    assert "reached-the-host" not in closed and "curl: (7)" in closed, closed
    assert opened == "exit code 0\nreached-the-host", opened


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_the_command_is_not_the_sandboxs_init_so_a_signal_ends_it(tmp_path: Path, launcher: str) -> None:
    """A namespace's PID 1 ignores every signal it has no handler for; the command must not be it."""
    out = shell(tmp_path, 'echo "pid $$"; kill -TERM $$; echo survived', SandboxPolicy(launcher=launcher))
    assert out.startswith("exit code 143\n") and "survived" not in out and "pid 1\n" not in out, out


def test_no_launcher_that_starts_means_the_command_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", failing_launchers(tmp_path / "bin"))
    with pytest.raises(SandboxUnavailable) as refused:
        shell(tmp_path, "echo ran > ran.txt", SandboxPolicy())
    message = str(refused.value)
    assert "bwrap: creating new namespace failed" in message and "unshare: creating new namespace failed" in message
    assert "[sandbox] enabled = false" in message and not (tmp_path / "ran.txt").exists()

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SandboxUnavailable, match="bwrap: not found on PATH; unshare: not found on PATH"):
        shell(tmp_path, "echo ran > ran.txt", SandboxPolicy())
    assert not (tmp_path / "ran.txt").exists()


def test_turned_off_explicitly_the_command_runs_as_the_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text('[sandbox]\nenabled = false\nenv = ["EXTRA"]\n')
    monkeypatch.delenv("TOOL_SANDBOX", raising=False)
    off = Settings(policy_file=str(policy_file)).sandbox_policy()
    assert (off.enabled, off.env) == (False, ("EXTRA",))
    assert Settings(tool_sandbox="off").sandbox_policy().enabled is False
    assert Settings(policy_file=str(policy_file), tool_sandbox="bwrap").sandbox_policy().enabled is True

    launch = sandboxed_launch(["/bin/sh", "-c", "true"], tmp_path, off, {"PATH": "/usr/bin", "UI_TOKEN": SECRET})
    assert launch.launcher is None and launch.argv == ["/bin/sh", "-c", "true"]
    assert SECRET not in launch.env.values(), "even unsandboxed, the environment stays an allow-list"
    assert f"{REPO_ROOT}" in shell(tmp_path, f"ls -d {REPO_ROOT}", off)


@pytest.mark.parametrize(
    ("setting", "value"), [("launcher", '"chroot"'), ("enabled", '"no"'), ("env", "[1]"), ("hide", '"/etc/x"')]
)
def test_a_bad_sandbox_table_is_refused_at_start(tmp_path: Path, setting: str, value: str) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(f"[sandbox]\n{setting} = {value}\n")
    with pytest.raises(ConfigError, match="sandbox"):
        Settings(policy_file=str(policy_file), tool_sandbox=None).sandbox_policy()


async def test_a_network_rule_gives_the_calls_it_covers_the_network_and_no_other(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, loopback_server: str
) -> None:
    policy_file = Path(settings.approvals_db).with_name("policy.toml")
    policy_file.write_text('mode = "auto_approve"\nnetwork = ["run_shell(curl *)"]\n')
    settings = replace(settings, policy_file=str(policy_file))
    fetch = f"curl -sS -m 5 {loopback_server}"
    model.behaviour = calls_then_summary(
        ("call_1", "run_shell", {"command": fetch}),
        ("call_2", "run_shell", {"command": f"{fetch}; echo second"}),  # not covered: `echo second`
        (
            "call_3",
            "run_shell",
            {"command": f"python3 -c 'import urllib.request as u; u.urlopen(\"{loopback_server}\")'"},
        ),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "fetch it"))
        state = await wait_status(client, cid, "idle")

    covered, mixed, other = tool_messages(state)
    assert covered == "exit code 0\nreached-the-host", covered
    assert "reached-the-host" not in mixed and "curl: (7)" in mixed and "second" in mixed
    assert "reached-the-host" not in other and "exit code 1" in other


async def test_an_approved_command_fails_closed_when_no_sandbox_starts(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("PATH", failing_launchers(tmp_path / "bin"))
    model.behaviour = calls_then_summary(("call_1", "run_shell", {"command": "echo ran > ran.txt"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "run it"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")

    [result] = tool_messages(state)
    assert result.startswith("Error: not run: the sandbox could not start (bwrap: creating new namespace failed")
    assert "results: Error: not run" in (state.messages[-1].content or ""), "the model is told"
    assert not (workspace_of(settings, cid) / "ran.txt").exists()
    assert approval_row(settings.approvals_db, row["request_id"])["execution_state"] == "failed"


def test_a_launcher_that_failed_its_probe_is_not_started_again_before_each_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As bubblewrap as root in a container without CAP_SYS_ADMIN: the next launcher that starts runs
    every command, and the one that failed is not started again (a process) before each of them."""
    # Where a root worker's "dropped" probe (setpriv to the sandbox uid first) can run and log it too.
    fakes = Path(tempfile.mkdtemp(prefix="failing-bwrap-"))
    fakes.chmod(0o777)
    started = fakes / "started"
    started.touch()
    started.chmod(0o666)
    fake = fakes / "bwrap"
    fake.write_text(
        f"#!/bin/sh\necho started >> {started}\n"
        "echo 'bwrap: creating new namespace failed: Operation not permitted' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fakes}:{os.environ.get('PATH', os.defpath)}")
    workspace = tmp_path / "workspace"
    for n in range(3):
        assert shell(workspace, f"echo run {n}", SandboxPolicy()) == f"exit code 0\nrun {n}\n"
    # Once per mode tried (a root worker tries two), at the first command only.
    try:
        assert started.read_text().count("started") == len(sandbox._modes())
    finally:
        shutil.rmtree(fakes)


def test_a_launch_is_prepared_on_the_event_loop_only_when_nothing_slow_is_left(tmp_path: Path) -> None:
    """Preparing a launch is quick once the launcher is chosen, unless the workspace still holds a
    tree to hand to the sandbox uid (a root worker chowns all of it the first time)."""
    environ = {"PATH": f"/usr/bin:/bin:/usr/sbin:/sbin:{tmp_path / 'not-a-dir'}"}  # a choice of its own
    policy = SandboxPolicy(launcher="unshare")
    first, empty, holding = tmp_path / "first", tmp_path / "empty", tmp_path / "holding"
    for workspace in (first, empty, holding):
        workspace.mkdir()
    (holding / "tree").mkdir()
    (holding / "tree" / "file.txt").write_text("x")
    assert not sandbox.quick_to_launch(first, policy, environ)  # the launchers are probed first
    sandboxed_launch(["true"], first, policy, environ)
    assert sandbox.quick_to_launch(first, policy, environ)
    assert sandbox.quick_to_launch(empty, policy, environ)
    assert sandbox.quick_to_launch(holding, policy, environ) is not worker_is_root()
    assert sandbox.quick_to_launch(first, replace(policy, enabled=False), {"PATH": "/nowhere"})


def test_a_path_that_only_starts_like_a_hidden_one_is_not_inside_it(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    near = (tmp_path / "work", tmp_path / "workspace2", tmp_path / "workspace-data")
    inside = (workspace / "secret", workspace / "deep" / "key")
    found = sandbox.hidden_inside(workspace, SandboxPolicy(hidden=(*near, *inside)))
    assert sorted(found) == sorted(inside)
    assert set(near) <= set(sandbox.hidden_inside(Path("/"), SandboxPolicy(hidden=near)))  # the root holds all
