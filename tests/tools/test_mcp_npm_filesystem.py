"""The reference filesystem server as npm ships it, under the sandbox, behind the approvals:
a read allowed by a rule, a write asked and then done once, a move denied by a rule."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, tool_messages, wait_pending, wait_status
from tests.support.mcp_support import with_config
from tests.support.processes import REPO_ROOT
from tests.support.scripts import ScriptedModel
from tests.tools.test_sandbox import LAUNCHERS
from worker import build_worker

PACKAGE = "@modelcontextprotocol/server-filesystem"
NPM_CACHE = REPO_ROOT / "build" / "npm-cache"  # kept between runs: a rerun installs from it
QUIET = ("--no-audit", "--no-fund", "--loglevel=error")
CONTENT = "written once through the filesystem server\n"
RULES = {
    "allow": ["mcp__fs__read_text_file", "mcp__fs__list_allowed_directories"],
    "ask": ["mcp__fs__write_file"],
    "deny": ["mcp__fs__move_file"],
}


def install_filesystem_server(prefix: Path) -> Path:
    """`npm install` of the server into prefix; its entry script."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed for this test (apt-get install npm)"
    subprocess.run(
        [npm, "install", "--prefix", str(prefix), "--cache", str(NPM_CACHE), "--prefer-offline", *QUIET, PACKAGE],
        check=True,
        capture_output=True,
        timeout=600,
    )
    script = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    assert script.is_file(), f"{PACKAGE} has no {script}"
    return script


NPX_CACHE = REPO_ROOT / "build" / "npx-cache"


def npx_once(workspace: Path) -> None:
    """`npx -y PACKAGE` once on the host, as the README says to do before the worker starts: the
    server starts, reads end-of-input and exits, leaving its install in the cache's `_npx`."""
    npx = shutil.which("npx")
    assert npx is not None, "npx is needed for this test (apt-get install npm)"
    subprocess.run(
        [npx, "-y", "--cache", str(NPX_CACHE), "--prefer-offline", PACKAGE, str(workspace)],
        stdin=subprocess.DEVNULL,
        check=True,
        capture_output=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def filesystem_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_filesystem_server(tmp_path_factory.mktemp("npm"))


@pytest.fixture(params=["node", "npx"])
def filesystem_server(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The server as `node SCRIPT .` (installed with npm install) or as `npx -y PACKAGE .`."""
    # "." is the server's working directory: the conversation's workspace, mounted at its host path.
    if request.param == "node":
        script: Path = request.getfixturevalue("filesystem_script")
        return {"command": "node", "args": [str(script), "."]}
    npx_once(tmp_path)
    return {"command": "npx", "args": ["-y", PACKAGE, "."], "env": {"npm_config_cache": str(NPX_CACHE)}}


def one_call_at_a_time(*calls: tuple[str, str, dict[str, Any]]) -> Any:
    """Each reply makes the next call, once the previous one's result is in; then a summary."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < len(calls):
            return tool_reply(calls[done])
        return text_reply("done")

    return behave


def found(workspace_root: Path, name: str) -> list[Path]:
    return [p for p in workspace_root.rglob(name) if p.is_file()]


@pytest.mark.parametrize("launcher", LAUNCHERS)
async def test_the_npm_filesystem_server_reads_writes_once_and_never_moves(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
    filesystem_server: dict[str, Any],
    launcher: str,
) -> None:
    settings = with_config(settings, tmp_path / "tools.toml", RULES, {"fs": filesystem_server})
    settings = Settings(**{**settings.__dict__, "tool_sandbox": launcher})
    model.behaviour = one_call_at_a_time(  # type: ignore[assignment]
        ("c_write", "mcp__fs__write_file", {"path": "notes.txt", "content": CONTENT}),
        ("c_read", "mcp__fs__read_text_file", {"path": "notes.txt"}),
        ("c_move", "mcp__fs__move_file", {"source": "notes.txt", "destination": "moved.txt"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "keep a note"))
        (pending,) = await wait_pending(settings.approvals_db, cid, 1)
        assert pending["tool_name"] == "mcp__fs__write_file"
        assert found(settings.workspace_dir, "notes.txt") == [], "nothing is written while the person thinks"
        decision = DecisionInput(request_id=pending["request_id"], decision="allow", decided_by="ann")
        await send_decision(client, settings, decision)
        state = await wait_status(client, cid, "idle")

    written, read, moved = tool_messages(state)
    assert "Error" not in written, written
    assert read.startswith(CONTENT), read
    assert "a deny rule of the policy forbids" in moved, moved
    (note,) = found(settings.workspace_dir, "notes.txt")
    assert note.read_text() == CONTENT, "written exactly once, with the content once"
    assert found(settings.workspace_dir, "moved.txt") == [], "the denied move did not happen"
    assert approval_row(settings.approvals_db, pending["request_id"])["execution_state"] == "done"
    assert len(model.reply_requests) == 4, "one request per call, then the summary"


BEFORE, AFTER = "the plan: ship on friday\n", "the plan: ship on monday\n"
DRY_RUN_RULES = {"allow": ["mcp__fs__write_file"], "ask": ["mcp__fs__edit_file"]}


async def test_a_tool_that_offers_a_dry_run_shows_it_on_the_card_and_changes_nothing(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
    filesystem_script: Path,
) -> None:
    """edit_file declares `dryRun`: the preview asks the server itself what the edit would change,
    in the call's own sandbox, and the card shows its answer; the file changes only if approved."""
    server = {"command": "node", "args": [str(filesystem_script), "."]}
    settings = with_config(settings, tmp_path / "tools.toml", DRY_RUN_RULES, {"fs": server})
    edit = {"path": "plan.txt", "edits": [{"oldText": "friday", "newText": "monday"}]}
    model.behaviour = one_call_at_a_time(  # type: ignore[assignment]
        ("c_write", "mcp__fs__write_file", {"path": "plan.txt", "content": BEFORE}),
        ("c_edit", "mcp__fs__edit_file", edit),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "move the ship date"))
        (pending,) = await wait_pending(settings.approvals_db, cid, 1)
        (plan,) = found(settings.workspace_dir, "plan.txt")
        assert plan.read_text() == BEFORE, "the dry run changed nothing"
        preview = json.loads(approval_row(settings.approvals_db, pending["request_id"])["preview_json"])
        assert "-the plan: ship on friday" in preview["dry_run"], preview
        assert "+the plan: ship on monday" in preview["dry_run"], preview
        assert preview["hints"]["destructiveHint"] is True, preview
        deny = DecisionInput(request_id=pending["request_id"], decision="deny", decided_by="ann", reason="not yet")
        await send_decision(client, settings, deny)
        state = await wait_status(client, cid, "idle")
    assert plan.read_text() == BEFORE, "denied: the file is as it was"
    assert "not yet" in tool_messages(state)[1]
