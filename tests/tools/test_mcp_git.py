"""mcp-server-git from PyPI (stdio), configured under [mcp_servers.git], behind the same approvals."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, new_workspace, rows, tool_messages, wait_pending, wait_status
from tests.support.mcp_support import commit_count, git_processes, git_repo, git_server, with_config
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


@pytest.fixture
def planned(settings: Settings) -> tuple[str, Path]:
    """The id of the conversation a test starts, and its workspace, made beforehand."""
    return new_workspace(settings)


@pytest.fixture
def repo(planned: tuple[str, Path]) -> Path:
    return git_repo(planned[1] / "repo")


@pytest.fixture
def git_settings(settings: Settings, tmp_path: Path, repo: Path) -> Settings:
    rules = {"allow": ["mcp__git__git_status"], "ask": ["write_file", "run_shell"]}
    return with_config(settings, tmp_path / "tools.toml", rules, {"git": git_server(repo)})


def status_then_commit(repo: Path, message: str) -> object:
    return calls_then_summary(
        ("c_status", "mcp__git__git_status", {"repo_path": str(repo)}),
        ("c_commit", "mcp__git__git_commit", {"repo_path": str(repo), "message": message}),
    )


async def test_status_runs_under_an_allow_rule_and_an_approved_commit_happens_once(
    client: Client,
    git_settings: Settings,
    model: ScriptedModel,
    planned: tuple[str, Path],
    repo: Path,
    histories: HistoryRecorder,
) -> None:
    model.behaviour = status_then_commit(repo, "add notes")  # type: ignore[assignment]
    async with build_worker(client, git_settings):
        cid = histories.track(await start_conversation(client, git_settings, "commit the notes", planned[0]))
        (pending,) = await wait_pending(git_settings.approvals_db, cid, 1)
        assert pending["tool_name"] == "mcp__git__git_commit", "git_status ran without asking"
        assert commit_count(repo) == 1, "nothing is committed while the person thinks"
        assert len(git_processes()) == 1, "one server, started on demand for the status"
        await send_decision(
            client, git_settings, DecisionInput(request_id=pending["request_id"], decision="allow", decided_by="ann")
        )
        state = await wait_status(client, cid, "idle")
        # The commit leaves GitPython's `git cat-file` helpers running: processes a call started
        # do not outlive it, so the server was stopped, to start again on the next call.
        assert git_processes() == [], "the server that kept the commit's processes was stopped"
    assert git_processes() == [], "the server stopped with the worker"

    status, committed = tool_messages(state)
    assert "Changes to be committed" in status and "notes.txt" in status
    assert "Changes committed successfully" in committed
    assert commit_count(repo) == 2
    row = approval_row(git_settings.approvals_db, pending["request_id"])
    assert row["decision"] == "allow" and row["execution_state"] == "done"
    ledger = rows(git_settings.ledger_db, "SELECT state FROM tool_executions WHERE tool_name LIKE 'mcp__%'")
    assert ledger == [{"state": "finished"}], "the commit went through the ledger; the read-only status did not"


async def test_denied_commit_never_runs_and_the_model_reads_the_reason(
    client: Client,
    git_settings: Settings,
    model: ScriptedModel,
    planned: tuple[str, Path],
    repo: Path,
    histories: HistoryRecorder,
) -> None:
    model.behaviour = status_then_commit(repo, "sneaky commit")  # type: ignore[assignment]
    async with build_worker(client, git_settings):
        cid = histories.track(await start_conversation(client, git_settings, "commit it", planned[0]))
        (pending,) = await wait_pending(git_settings.approvals_db, cid, 1)
        decision = DecisionInput(
            request_id=pending["request_id"], decision="deny", reason="not on a Friday", decided_by="bob"
        )
        await send_decision(client, git_settings, decision)
        state = await wait_status(client, cid, "idle")

    assert commit_count(repo) == 1
    denied = tool_messages(state)[1]
    assert "bob denied this mcp__git__git_commit call" in denied and "not on a Friday" in denied
    last = model.requests[-1]["messages"]
    assert any("not on a Friday" in str(m.get("content")) for m in last if m["role"] == "tool")
