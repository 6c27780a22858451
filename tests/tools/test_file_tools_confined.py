"""The built-in file tools cannot be raced out of the workspace, and a huge file cannot take the worker down.

A process flips a name in the workspace between a plain file and a symlink (to the worker's own
/proc/self/environ, or to a file outside) while the tool is called on it again and again, as an
approved command could. Each launcher is tried, and the in-process way the tools take when the
user turned the sandbox off. The worker runs as root here, as `make run` started as root does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from temporalio.client import Client

from activities.builtin_tools import BUILTIN_TOOLS, KvStore, Workspace
from activities.sandbox import SandboxPolicy, SandboxUnavailable
from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.support.failure_support import wait_turn, worker_process
from tests.support.helpers import tool_messages, wait_pending, workspace_of
from tests.support.processes import REPO_ROOT
from tests.support.scripts import ScriptedModel, tool_results

SECRET = "sk-secret-marker"
LAUNCHERS = ["bwrap", "unshare", "off"]


def race(tool: str, count: int, tmp_path: Path, launcher: str) -> tuple[list[str], Path]:
    """Run tests/support/file_race.py as a worker with secrets in its environment; (results, outside file)."""
    outside = tmp_path / "outside" / "target"
    outside.parent.mkdir(parents=True)
    outside.write_text("untouched")
    env = dict(os.environ, OPENAI_API_KEY=SECRET, SLACK_SIGNING_SECRET=f"{SECRET}-slack")
    args = [tool, str(count), str(tmp_path / "workspace"), str(outside), launcher]
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.file_race", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout), outside


def test_the_race_runs_as_root() -> None:
    assert os.geteuid() == 0, "these tests stand for a worker started as root"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_200_reads_racing_a_link_to_proc_self_environ_never_return_a_secret(tmp_path: Path, launcher: str) -> None:
    got_past_the_check: list[str] = []
    for attempt in range(6):  # a loaded machine may starve the flipper: race again until it mattered
        results, _ = race("read_file", 200, tmp_path / str(attempt), launcher)
        assert len(results) == 200
        leaked = [r for r in results if SECRET in r]
        assert leaked == [], f"{len(leaked)} of 200 reads returned the worker's environment"
        got_past_the_check += [r for r in results if "resolves outside the workspace" not in r]
        if got_past_the_check:
            break
    assert got_past_the_check, "the race never got past the check by name: it proved nothing"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_100_writes_racing_a_link_to_an_outside_file_never_touch_it(tmp_path: Path, launcher: str) -> None:
    results, outside = race("write_file", 100, tmp_path, launcher)
    assert len(results) == 100
    assert outside.read_text() == "untouched"
    assert sorted(p.name for p in outside.parent.iterdir()) == ["target"]


def sample_rss(pid: int, stop: threading.Event, peak: list[int]) -> None:
    process = psutil.Process(pid)
    while not stop.is_set():
        with contextlib.suppress(psutil.Error):
            peak[0] = max(peak[0], sum(p.memory_info().rss for p in [process, *process.children(recursive=True)]))
        stop.wait(0.02)


async def test_a_3_gib_sparse_file_is_refused_unread_and_the_worker_stays_small(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    """As in the report: an approved `truncate -s 3G big.bin`, then an allowed read_file big.bin,
    through a real worker process whose resident memory is sampled throughout."""

    def behave(messages: list[dict]) -> dict:  # type: ignore[type-arg]
        last_user = [m for m in messages if m["role"] == "user"][-1]["content"]
        if messages[-1]["role"] == "user":
            call = ("t1", "run_shell", {"command": "truncate -s 3G big.bin"})
            if last_user == "now read it":
                call = ("r1", "read_file", {"path": "big.bin"})
            return tool_reply(call)
        return text_reply("read: " + str(tool_results(messages)[-1]["content"]))

    model.behaviour = behave
    policy = tmp_path / "policy.toml"
    # A 3 GiB (sparse) file is over the default file-size limit of a tool's process: raise it here.
    policy.write_text('allow = ["read_file"]\nask = ["run_shell"]\n\n[sandbox]\nfile_size_mb = 4096\n')
    settings = replace(settings, policy_file=str(policy))
    with worker_process(settings, client, tmp_path / "worker.log") as worker:
        worker.wait_ready()
        assert worker.proc is not None
        cid = await start_conversation(client, settings, "make a big file")
        [row] = await wait_pending(settings.approvals_db, cid, 1, timeout=60)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_turn(client, cid, "idle")
        big = workspace_of(settings, cid) / "big.bin"
        assert big.stat().st_size == 3 * 1024**3

        stop, peak = threading.Event(), [0]
        sampler = threading.Thread(target=sample_rss, args=(worker.proc.pid, stop, peak))
        sampler.start()
        try:
            await send_message(client, cid, "now read it")
            state = await wait_turn(client, cid, "idle")
        finally:
            stop.set()
            sampler.join()

    result = tool_messages(state)[-1]
    assert result.startswith("Error: big.bin is 3 GiB, over the read limit of 4 MiB"), result
    assert "\x00" not in result
    assert 0 < peak[0] < 1024**3, f"the worker's resident memory reached {peak[0] / 1024**2:.0f} MiB"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "a.txt"}),
        ("write_file", {"path": "b.txt", "content": "x"}),
        ("list_dir", {"path": "."}),
        ("file_info", {"path": "a.txt"}),
    ],
)
def test_with_no_sandbox_to_start_the_file_tools_do_nothing(tmp_path: Path, tool: str, args: dict[str, str]) -> None:
    """Fail closed like run_shell: no launcher starts here, so nothing is read, listed or written."""
    (tmp_path / "a.txt").write_text("never shown")
    ws = Workspace(tmp_path, SandboxPolicy(launcher="no-such-launcher"))

    async def call() -> str:
        return await BUILTIN_TOOLS[tool](ws, KvStore({}), args, lambda: None)

    with pytest.raises(SandboxUnavailable, match="the sandbox could not start"):
        asyncio.run(call())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_the_read_limit_and_binary_files_on_every_way_in(tmp_path: Path, launcher: str) -> None:
    policy = SandboxPolicy(enabled=launcher != "off", launcher="auto" if launcher == "off" else launcher)
    ws = Workspace(tmp_path, policy, max_read_bytes=1024)

    def call(tool: str, **args: str) -> str:
        async def run() -> str:
            return await BUILTIN_TOOLS[tool](ws, KvStore({}), args, lambda: None)

        return asyncio.run(run())

    with (tmp_path / "big.bin").open("wb") as big:
        big.truncate(3 * 1024**3)
    (tmp_path / "exact.txt").write_text("x" * 1024)
    (tmp_path / "nul.bin").write_bytes(b"ab\x00cd")
    with pytest.raises(ValueError, match=r"^big.bin is 3 GiB, over the read limit of 1 KiB"):
        call("read_file", path="big.bin")
    assert call("read_file", path="exact.txt") == "x" * 1024, "a file of exactly the limit is read"
    with pytest.raises(ValueError, match=r"^nul.bin is a binary file \(5 bytes\)"):
        call("read_file", path="nul.bin")
    assert call("write_file", path="d/e/f.txt", content="héllo") == "Wrote 6 bytes to d/e/f.txt"
    assert call("read_file", path="d/e/f.txt") == "héllo"
    assert call("list_dir", path=".") == "big.bin\nd/\nexact.txt\nnul.bin"
    assert call("list_dir", path="exact.txt") == "Error: exact.txt is not a directory"
    assert call("read_file", path="d") == "Error: d does not exist or is not a file"
