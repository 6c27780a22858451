"""End to end, as a user: the processes `make run` starts, the CLI as a subprocess, files on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import workspace_of
from tests.support.postgres import on_both_backends_postgres_at_scale
from tests.support.processes import DevServer
from tests.support.stack import Stack, make_stack, until

pytestmark = on_both_backends_postgres_at_scale


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("temporal")
    server = DevServer(tmp / "temporal.db", tmp / "temporal.log").start()
    yield server
    server.stop()


@pytest.fixture
def stack(tmp_path: Path, temporal: DevServer, database: str | Path) -> Iterator[Stack]:
    system = make_stack(tmp_path, temporal.address, database)
    yield system
    system.stop()


def test_start_approve_and_the_approved_write_happens(stack: Stack) -> None:
    stack.start_worker()
    conversation_id = stack.cli_ok("start", "write hello to notes.txt").stdout.strip()

    [row] = stack.wait_pending(conversation_id, 1)
    assert (row["tool_name"], row["arguments"]) == ("write_file", {"path": "notes.txt", "content": "hello"})
    assert not (workspace_of(stack.settings, conversation_id) / "notes.txt").exists()
    table = stack.cli_ok("pending").stdout
    assert row["request_id"] in table and 'write_file {"content": "hello", "path": "notes.txt"}' in table

    approved = stack.cli_ok("approve", row["request_id"], "--as", "alice")
    assert "Approved" in approved.stdout
    state = stack.wait_status(conversation_id, "idle")

    assert (workspace_of(stack.settings, conversation_id) / "notes.txt").read_text() == "hello"
    answer = state["messages"][-1]["content"]
    assert "scripted demo model" in answer and "Wrote 5 bytes to notes.txt" in answer
    assert stack.pending(conversation_id) == []
    listed = stack.cli_ok("conversations").stdout
    assert conversation_id in listed and "idle" in listed
    rebuilt = json.loads(stack.cli_ok("rebuild-projection", "--json").stdout)
    assert (rebuilt["conversations"], rebuilt["pending_restored"]) == (1, 0)


def test_always_allow_frees_the_sibling_and_a_denial_reaches_the_model(stack: Stack) -> None:
    stack.start_worker()
    conversation_id = stack.cli_ok("start", "write one to a.txt and write two to b.txt").stdout.strip()
    first, second = stack.wait_pending(conversation_id, 2)
    assert [first["arguments"]["path"], second["arguments"]["path"]] == ["a.txt", "b.txt"]

    stack.cli_ok("approve", first["request_id"], "--always")
    stack.wait_status(conversation_id, "idle")
    workspace = workspace_of(stack.settings, conversation_id)
    assert (workspace / "a.txt").read_text() == "one" and (workspace / "b.txt").read_text() == "two"

    stack.cli_ok("send", conversation_id, "run echo hi")
    [shell] = stack.wait_pending(conversation_id, 1)
    assert (shell["tool_name"], shell["arguments"]) == ("run_shell", {"command": "echo hi"})
    stack.cli_ok("deny", shell["request_id"], "--reason", "no shell today")
    state = stack.wait_status(conversation_id, "idle")
    assert "denied" in state["messages"][-1]["content"] and "no shell today" in state["messages"][-1]["content"]

    watched = stack.cli_ok("watch", conversation_id)
    assert "no shell today" in watched.stdout and watched.stdout.rstrip().endswith("is idle.")


def test_decision_sent_while_no_worker_runs_completes_after_a_new_worker_starts(stack: Stack) -> None:
    worker = stack.start_worker()
    conversation_id = stack.cli_ok("start", "write kept to kept.txt").stdout.strip()
    [row] = stack.wait_pending(conversation_id, 1)
    requests_before = stack.model.request_count()
    assert requests_before == 1

    worker.kill()
    down = stack.cli_ok("show", conversation_id, "--timeout", "1")
    assert "worker" in down.stderr and "awaiting_approval" in down.stdout
    stack.cli_ok("approve", row["request_id"])  # a signal: Temporal keeps it with no worker up
    assert not (workspace_of(stack.settings, conversation_id) / "kept.txt").exists()

    stack.start_worker()
    state = stack.wait_status(conversation_id, "idle", timeout=90)
    assert (workspace_of(stack.settings, conversation_id) / "kept.txt").read_text() == "kept"
    assistant_messages = [m for m in state["messages"] if m["role"] == "assistant"]
    assert len(assistant_messages) == 2
    assert until(lambda: stack.model.request_count() == 2) and stack.model.request_count() == len(assistant_messages)
