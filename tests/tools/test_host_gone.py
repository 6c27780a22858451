"""A host gone for good (SIGKILLed, its workspace gone, the payload store kept): after
HOST_GONE_SECONDS with no worker polling it, its conversations move to a live host on their own,
their files restored from the last save; a tool that was running there is "outcome unknown" and
never runs twice; and while they wait, `show` and `hosts` say for what."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel
from tests.tools.host_support import Hosts, by_the_word, hosts_listing, shown

GONE_SECONDS = 20


@pytest.mark.timeout(300)
async def test_a_lost_host_moves_its_conversations_with_their_files_and_runs_nothing_twice(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = by_the_word
    settings = replace(settings, host_gone_seconds=GONE_SECONDS)
    db = settings.approvals_db
    hosts = Hosts(settings, client, tmp_path, HOST_GONE_SECONDS=str(GONE_SECONDS), WORKSPACE_SAVES="on")
    try:
        hosts.start("pod-a")
        writer = histories.track(await start_conversation(client, settings, "write first"))
        [row] = await wait_pending(db, writer, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, writer, "idle", tool_results=1)

        runner = histories.track(await start_conversation(client, settings, "run slowly 60"))
        [shell] = await wait_pending(db, runner, 1)
        await send_decision(client, settings, DecisionInput(request_id=shell["request_id"], decision="allow"))
        runs_on_a = workspace_of(hosts.workspace("pod-a"), runner) / "runs.txt"
        await eventually(lambda: _has(runs_on_a, "started"))

        await send_message(client, writer, "write second")
        [second] = await wait_pending(db, writer, 1)
        hosts.lose("pod-a")  # mid-shell, with a write waiting for a person
        hosts.start("pod-b")

        approved = time.monotonic()
        await send_decision(client, settings, DecisionInput(request_id=second["request_id"], decision="allow"))
        # While the write waits for pod-a, every place a person looks says so, naming the host.
        waiting = await eventually(lambda: _says_waiting(settings, client, writer), timeout=GONE_SECONDS + 10)
        assert "waiting for host pod-a" in waiting
        listed = await hosts_listing(settings, client)
        assert listed["pod-a"]["waiting_tools"] >= 1, listed
        assert listed["pod-a"]["last_poll"] is not None, "pod-a polled before it died"

        state = await wait_status(client, writer, "idle", timeout=60, tool_results=2)
        assert time.monotonic() - approved < 60, "the approved write ran within a minute of the approval"
        on_b = workspace_of(hosts.workspace("pod-b"), writer)
        assert (on_b / "first.txt").read_text() == "first", "what pod-a's tools wrote came with the move"
        assert (on_b / "second.txt").read_text() == "second"
        told = tool_messages(state)[-1]
        assert "moved from host pod-a to pod-b" in told and "restored as of the save" in told, told
        assert "waiting for host" not in await shown(settings, client, writer)

        # The shell that died with pod-a: reported unknown on pod-b, never run again.
        ran = await wait_status(client, runner, "idle", timeout=120, tool_results=1)
        [result] = tool_messages(ran)
        assert result.startswith("Note: this conversation moved from host pod-a to pod-b"), result
        assert "Outcome unknown" in result and "NOT run again" in result
        assert not (workspace_of(hosts.workspace("pod-b"), runner) / "runs.txt").exists(), "the shell ran twice"
        assert "moved from host pod-a to pod-b" in hosts.log("pod-b")
    finally:
        hosts.stop_all()

    moves = rows(db, "SELECT payload_json FROM ui_events WHERE event_type = 'conversation.moved'")
    assert len(moves) == 2 and all('"why":"host_gone"' in m["payload_json"].replace(" ", "") for m in moves), moves
    audit = await run_cli(settings, client, "audit")
    assert audit.returncode == 0, audit.stderr
    assert audit.stdout.count("moved from pod-a to pod-b") == 2, audit.stdout


async def _has(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text()


async def _says_waiting(settings: Settings, client: Client, conversation_id: str) -> str | None:
    out = await shown(settings, client, conversation_id)
    return out if "waiting for host" in out else None
