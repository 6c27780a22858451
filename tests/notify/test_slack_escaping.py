"""Slack shows model-written text as the card does: a right-to-left override beside the Allow
button is escaped, flagged, and cannot open a link or a mention; the bytes that run are unchanged."""

from __future__ import annotations

import html
import json
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.support.helpers import eventually, wait_pending
from tests.support.notify_support import SLACK_SIGNING_SECRET, Receiver, write_policy
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

RLO = "\u202e"
COMMAND = f"echo safe {RLO}#; <!channel> <http://evil.example|ok> &"


async def test_the_slack_message_escapes_an_override_and_slack_markup(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SLACK_SIGNING_SECRET)
    receiver = Receiver().start()
    policy = f"""ask = ["run_shell"]

[channels.ops]
kind = "slack"
url = "{receiver.url("/slack")}"
groups = ["ops"]

[[approvers]]
match = ["run_shell"]
approvers = ["group:ops"]
"""
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", policy))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": COMMAND}))
    try:
        async with build_worker(client, settings):
            cid = await start_conversation(client, settings, "slack escaping")
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            [message] = await eventually(lambda: receiver.count(1, "/slack"))
    finally:
        receiver.stop()

    raw = message.body.decode()
    sent = json.loads(raw)
    assert RLO not in json.dumps(sent, ensure_ascii=False), "the override reached Slack raw"
    texts = [block["text"]["text"] for block in sent["blocks"] if block["type"] == "section"]
    assert any("hidden characters" in text for text in texts), texts
    [code] = [text for text in texts if text.startswith("```")]
    assert "\\u202e" in code
    assert "<!channel>" not in code and "<http://" not in code  # no mention, no link
    # The escape is JSON's own: read as JSON, the shown arguments are exactly the ones that run.
    assert json.loads(html.unescape(code.strip("`")))["command"] == COMMAND
    assert json.loads(row["details_json"])["arguments"]["command"] == COMMAND  # what runs is unchanged
