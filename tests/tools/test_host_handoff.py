"""A deploy strands nothing: a worker replaced by one with another host name over the same workspace
is the same host (the id kept in the workspace), and a worker stopped with SIGTERM lets its
running tool finish and hands its conversations to the other worker at once."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.host_identity import HOST_ID_FILE
from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel
from tests.tools.host_support import Hosts, by_the_word, terminate


def renamed(host_name: str) -> list[str]:
    """Run the worker in a UTS namespace of its own, named host_name: a new container's host name.
    As root a plain unshare does; otherwise a user namespace maps the caller to root first."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux unshare is needed to give a worker another host name"
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return [unshare, *user, "--uts", "sh", "-c", f'hostname {host_name} && exec "$0" "$@"']


@pytest.mark.timeout(240)
async def test_a_worker_with_a_new_host_name_over_the_same_workspace_is_the_same_host(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = by_the_word
    db = settings.approvals_db
    hosts = Hosts(settings, client, tmp_path)
    workspace = hosts.workspace("volume")
    try:
        # WORKER_HOST unset (empty): the id kept in the workspace names the host.
        first = hosts.start("volume", command_prefix=renamed("container-one"), WORKER_HOST="")
        ran_tools = histories.track(await start_conversation(client, settings, "write early"))
        [row] = await wait_pending(db, ran_tools, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, ran_tools, "idle", tool_results=1)
        waiting = histories.track(await start_conversation(client, settings, "write during"))
        [asked] = await wait_pending(db, waiting, 1)
        kept = (workspace / HOST_ID_FILE).read_text().strip()
        assert kept.startswith("container-one-"), kept

        terminate(first)  # the deploy: the old container goes, a new one with another name comes
        assert first.proc is not None and first.proc.wait(timeout=60) == 0
        hosts.start("volume", command_prefix=renamed("container-two"), WORKER_HOST="")
        assert (workspace / HOST_ID_FILE).read_text().strip() == kept

        deployed = time.monotonic()
        await send_decision(client, settings, DecisionInput(request_id=asked["request_id"], decision="allow"))
        await wait_status(client, waiting, "idle", tool_results=1, timeout=30)
        await send_message(client, ran_tools, "write late")
        [late] = await wait_pending(db, ran_tools, 1)
        await send_decision(client, settings, DecisionInput(request_id=late["request_id"], decision="allow"))
        await wait_status(client, ran_tools, "idle", tool_results=2, timeout=30)
        assert time.monotonic() - deployed < 30, "both ran within seconds, with no move"
    finally:
        hosts.stop_all()
    assert (workspace_of(workspace, waiting) / "during.txt").read_text() == "during"
    assert (workspace_of(workspace, ran_tools) / "late.txt").read_text() == "late"
    assert rows(db, "SELECT event_id FROM ui_events WHERE event_type = 'conversation.moved'") == []


@pytest.mark.timeout(300)
async def test_sigterm_lets_the_running_tool_finish_and_hands_every_conversation_over_at_once(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = by_the_word
    settings = replace(settings, host_gone_seconds=120.0)
    db = settings.approvals_db
    hosts = Hosts(settings, client, tmp_path, WORKSPACE_SAVES="on", WORKER_STOP_GRACE_SECONDS="30")
    try:
        leaving = hosts.start("pod-a")
        asking = []
        for name in ("one", "two", "three"):
            conversation = histories.track(await start_conversation(client, settings, f"write {name}-early"))
            [row] = await wait_pending(db, conversation, 1)
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
            await wait_status(client, conversation, "idle", tool_results=1)
            await send_message(client, conversation, f"write {name}-late")
            asking.append((conversation, name, (await wait_pending(db, conversation, 1))[0]["request_id"]))
        runner = histories.track(await start_conversation(client, settings, "run slowly 4"))
        [shell] = await wait_pending(db, runner, 1)
        await send_decision(client, settings, DecisionInput(request_id=shell["request_id"], decision="allow"))
        runs = workspace_of(hosts.workspace("pod-a"), runner) / "runs.txt"
        await eventually(lambda: _has(runs, "started"))
        hosts.start("pod-b")

        stopped = time.monotonic()
        terminate(leaving)
        assert leaving.proc is not None and leaving.proc.wait(timeout=90) == 0
        assert runs.read_text() == "started\nfinished\n", "the running tool finished within the grace"
        ran = await wait_status(client, runner, "idle", tool_results=1)
        assert "Outcome unknown" not in tool_messages(ran)[0]

        for _, _, request_id in asking:
            await send_decision(client, settings, DecisionInput(request_id=request_id, decision="allow"))
        for conversation, name, _ in asking:
            state = await wait_status(client, conversation, "idle", tool_results=2, timeout=60)
            on_b = workspace_of(hosts.workspace("pod-b"), conversation)
            assert (on_b / f"{name}-late.txt").read_text() == f"{name}-late"
            assert (on_b / f"{name}-early.txt").read_text() == f"{name}-early", "restored from the save"
            assert "moved from host pod-a to pod-b" in tool_messages(state)[-1]
        assert time.monotonic() - stopped < 60, "handed over well before HOST_GONE_SECONDS (120 s)"
        assert "handed over" in hosts.log("pod-a")
    finally:
        hosts.stop_all()
    moved = rows(db, "SELECT payload_json FROM ui_events WHERE event_type = 'conversation.moved'")
    assert len(moved) == 4 and all("handed_over" in row["payload_json"] for row in moved), moved


async def _has(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text()
