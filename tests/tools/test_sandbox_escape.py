"""An approved shell command cannot approve anything: not through the approvals API, not through
the CLI, not with a raw Temporal signal. Each attack targets another conversation's pending
write_file; with the sandbox turned off the same command succeeds, which shows the attack is real."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder, binary
from tests.support.helpers import (
    approval_row,
    new_workspace,
    pending_rows,
    tool_messages,
    wait_pending,
    wait_status,
    workspace_of,
)
from tests.support.processes import REPO_ROOT
from tests.support.scripts import ScriptedModel, calls_then_summary, first_user_text
from tests.support.stack import make_stack
from tests.support.ui_fixtures import served_app
from worker import build_worker

VICTIM = "write hello to notes.txt"
Attack = Callable[[Settings, str, str, str], str]


def via_api(settings: Settings, temporal: str, ui_url: str, request_id: str) -> str:
    """curl to the approvals API, with the headers a browser on the inbox would send."""
    body = json.dumps({"decision": "allow", "reason": "looks fine"})
    return (
        f"curl -sS -m 5 -X POST -H 'Origin: {ui_url}' -H 'Sec-Fetch-Site: same-origin' "
        "-H 'Content-Type: application/json' "
        f"-d '{body}' {ui_url}/api/approvals/{request_id}/decision"
    )


def via_cli(settings: Settings, temporal: str, ui_url: str, request_id: str) -> str:
    """The project's own CLI, pointed at the project's own server and projection."""
    env = f"TEMPORAL_ADDRESS={temporal} APPROVALS_DB={settings.approvals_db} TASK_QUEUE={settings.task_queue}"
    return f"cd {REPO_ROOT} && {env} {sys.executable} starter.py approve {request_id} --as agent"


def via_signal(settings: Settings, temporal: str, ui_url: str, request_id: str) -> str:
    """A raw signal with the temporal CLI, which the agent has fetched into its workspace."""
    victim = request_id.removeprefix("perm_").rsplit("_call_", 1)[0]
    payload = shlex.quote(json.dumps({"request_id": request_id, "decision": "allow"}))
    return (
        f"./temporal workflow signal --address {temporal} --workflow-id {victim} "
        f"--name approval_decision --input {payload}"
    )


# Each attack and how its failure reads (bubblewrap's network namespace has a loopback with nothing
# listening; unshare's has none at all).
ATTACKS: dict[str, tuple[Attack, str]] = {
    "approvals API": (via_api, r"curl: \(7\)"),
    "CLI": (via_cli, "can't cd to"),
    "raw signal": (via_signal, "connection refused|network is unreachable"),
}


def two_conversations(model: ScriptedModel, attack_command: Callable[[], str]) -> None:
    """The victim asks to write a file; the attacker's approved shell command runs `attack_command()`."""
    victim = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if first_user_text(messages) == VICTIM:
            return victim(messages)
        return calls_then_summary(("call_1", "run_shell", {"command": attack_command()}))(messages)

    model.behaviour = behave


@pytest.mark.parametrize("sandbox", ["auto", "unshare", "off"])
@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_an_approved_command_cannot_approve_another_request(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
    attack: str,
    sandbox: str,
) -> None:
    temporal = client.service_client.config.target_host
    settings = replace(settings, tool_sandbox=sandbox)
    attacker_id, attacker_files = new_workspace(settings)
    shutil.copy(binary("temporal"), attacker_files / "temporal")
    ui = served_app(settings, temporal)
    build, failure = ATTACKS[attack]
    target: list[str] = []
    two_conversations(model, lambda: build(settings, temporal, ui.url, target[0]))
    try:
        async with build_worker(client, settings):
            victim = histories.track(await start_conversation(client, settings, VICTIM))
            [pending] = await wait_pending(settings.approvals_db, victim, 1)
            target.append(pending["request_id"])
            attacker = histories.track(await start_conversation(client, settings, f"attack via {attack}", attacker_id))
            [shell] = await wait_pending(settings.approvals_db, attacker, 1)
            await send_decision(client, settings, DecisionInput(request_id=shell["request_id"], decision="allow"))
            state = await wait_status(client, attacker, "idle", timeout=60)
            [output] = tool_messages(state)
            if sandbox == "off":  # the attack is real: unsandboxed, it approves the victim's write
                await wait_status(client, victim, "idle", timeout=60)
                assert (workspace_of(settings, victim) / "notes.txt").read_text() == "hello", output
                return
            victim_state = await wait_status(client, victim, "awaiting_approval")
    finally:
        ui.stop()

    assert re.search(failure, output), output
    assert [r["request_id"] for r in pending_rows(settings.approvals_db, victim)] == target
    assert approval_row(settings.approvals_db, target[0])["decision"] is None
    assert [r.request_id for r in victim_state.pending_approvals] == target
    assert not (workspace_of(settings, victim) / "notes.txt").exists()


def test_a_worker_process_keeps_its_secrets_from_an_approved_command(client: Client, tmp_path: Path) -> None:
    """As `make run` runs it: a real worker process with a token and a model key in its environment."""
    stack = make_stack(tmp_path, client.service_client.config.target_host)
    stack.env.update(UI_TOKEN="ui-token-of-the-worker", OPENAI_API_KEY="model-key-of-the-worker")
    try:
        stack.start_worker()
        # As root, the sandbox's pid 1 is bubblewrap's own reaper, which the sandbox uid may not read.
        conversation_id = stack.cli_ok("start", "run env && cat /proc/[0-9]*/environ; exit 0").stdout.strip()
        [row] = stack.wait_pending(conversation_id, 1)
        stack.cli_ok("approve", row["request_id"])
        state = stack.wait_status(conversation_id, "idle")
    finally:
        stack.stop()

    [output] = [m["content"] for m in state["messages"] if m["role"] == "tool"]
    assert output.startswith("exit code 0\n") and "PATH=" in output and "HOME=/tmp" in output, output
    for secret in ("ui-token-of-the-worker", "model-key-of-the-worker", stack.env["TEMPORAL_ADDRESS"]):
        assert secret not in output
    assert str(stack.settings.approvals_db) not in output and stack.settings.task_queue not in output
    assert re.search(r"tool sandbox: (bwrap|unshare) \(", stack.worker_log.read_text())
