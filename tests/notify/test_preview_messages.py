"""A Slack message shows a request's preview and reason shortened and escaped; a webhook carries them whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from channels.slack import slack_message
from channels.webhook import webhook_body
from core.conversation_model import NotificationInput
from core.previews import file_preview
from core.why import EarlierDecision, why_for

BEFORE = "".join(f"line {n}\n" for n in range(40)).encode()
AFTER = BEFORE.replace(b"line 3\n", b"<!channel> ``` line 3\n").replace(b"line 30\n", b"")


def notification() -> NotificationInput:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    earlier = [EarlierDecision(request_id="r0", tool_name="run_shell", resolution="deny", reason="no")]
    return NotificationInput(
        key="k",
        channel="team",
        kind="request",
        request_id="perm_c_1",
        conversation_id="c",
        tool_name="write_file",
        arguments={"path": "a.txt", "content": AFTER.decode()},
        expires_at=now,
        created_at=now,
        preview=file_preview("a.txt", BEFORE, AFTER),
        why=why_for("please fix <@U123> a.txt", "Fixing line 3 " + "x" * 1000, earlier),
    )


def test_slack_shows_the_diff_and_the_reason_shortened_and_escaped() -> None:
    text = json.dumps(slack_message(notification(), "https://ui/r"))
    assert "Will change:* overwrite a.txt: +1 -2 lines" in text
    assert "-line 3" in text and "&lt;!channel&gt;" in text and "<!channel>" not in text
    assert "&lt;@U123&gt;" in text and "Asked:* please fix" in text
    assert "x" * 280 in text and "x" * 300 not in text
    assert "-line 30" not in text and "the card shows them all" in text  # past the first lines
    assert "1 call(s) of this conversation not run" in text


def test_the_webhook_carries_the_whole_preview_and_reason() -> None:
    sent = notification()
    body = json.loads(webhook_body(sent, "https://ui/r"))
    assert sent.preview is not None
    assert body["preview"]["diff"] == sent.preview.diff and "-line 30\n" in body["preview"]["diff"]
    assert body["preview"]["target_hash"] == sent.preview.target_hash
    assert body["why"]["user_message"] == "please fix <@U123> a.txt"
    assert body["why"]["earlier"][0]["reason"] == "no"
