"""file_info, the built-in that says what a path is without reading it: on every way in (each
sandbox launcher, and in process with the sandbox off), and called by a model, unasked."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.builtin_tools import BUILTIN_TOOLS, KvStore, Workspace
from activities.sandbox import SandboxPolicy
from config.settings import Settings
from core.policy import DEFAULT_RULES, evaluate
from core.tool_specs import InvalidToolCall
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import new_workspace, tool_messages, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

LAUNCHERS = ["bwrap", "unshare", "off"]


def info(ws: Workspace, path: str) -> str:
    async def call() -> str:
        return await BUILTIN_TOOLS["file_info"](ws, KvStore({}), {"path": path}, lambda: None)

    return asyncio.run(call())


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_path_is_named_a_file_with_its_size_or_a_directory_with_its_entries(tmp_path: Path, launcher: str) -> None:
    policy = SandboxPolicy(enabled=launcher != "off", launcher="auto" if launcher == "off" else launcher)
    ws = Workspace(tmp_path, policy, max_read_bytes=1024)
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / ".hidden").write_text("x")
    (tmp_path / "small.txt").write_text("hello")
    (tmp_path / "empty.txt").write_text("")
    with (tmp_path / "big.bin").open("wb") as big:
        big.truncate(3 * 1024**3)
    os.mkfifo(tmp_path / "pipe")

    assert info(ws, "small.txt") == "small.txt: a file of 5 bytes"
    assert info(ws, "empty.txt") == "empty.txt: a file of 0 bytes"
    assert info(ws, "big.bin") == "big.bin: a file of 3 GiB (3221225472 bytes); over read_file's limit of 1 KiB"
    assert info(ws, "d") == "d: a directory of 2 entries"
    assert info(ws, "d/e") == "d/e: a directory of 0 entries"
    assert info(ws, ".") == "the workspace: a directory of 5 entries"
    assert info(ws, "pipe") == "pipe: neither a regular file nor a directory"
    assert info(ws, "nope.txt") == "Error: nope.txt does not exist"


def test_a_link_out_of_the_workspace_is_refused_before_anything_runs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "out").symlink_to(tmp_path)
    with pytest.raises(InvalidToolCall, match="outside the workspace"):
        info(Workspace(root), "out")


async def test_a_model_asks_what_a_file_is_and_no_person_is_asked(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    assert evaluate(DEFAULT_RULES, "file_info", "notes.txt") == "allow", "read-only, like read_file"
    planned, ws = new_workspace(settings)
    (ws / "notes.txt").write_text("x" * 2048)
    model.behaviour = calls_then_summary(("call_info", "file_info", {"path": "notes.txt"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "how big is notes.txt?", planned))
        state = await wait_status(client, cid, "idle", tool_results=1)
    assert tool_messages(state) == ["notes.txt: a file of 2 KiB (2048 bytes)"]
    assert state.pending_approvals == []
    offered = [tool["function"]["name"] for tool in model.requests[0]["tools"]]
    assert "file_info" in offered
