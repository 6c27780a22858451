"""`watch` prints the streamed reply on one line as it comes, and a retried call on a new line."""

from __future__ import annotations

from typing import Any

import pytest

from cli.stream_printer import HOLD_SECONDS, StreamPrinter
from cli.watch import _Follower


def delta(event_id: int, text: str, attempt: int = 1, **extra: Any) -> dict[str, Any]:
    payload = {"turn_id": "turn-1", "call_id": "1", "attempt": attempt, "text": text, **extra}
    return {"event_id": event_id, "event_type": "message.delta", "payload": payload, "created_at": "2026-01-01"}


def test_watch_prints_deltas_and_restarts(capsys: pytest.CaptureFixture[str]) -> None:
    follower = _Follower(session=None, conversation_id="c")  # type: ignore[arg-type]
    follower.print_events([delta(1, "Hel"), delta(2, "lo, ")])
    assert capsys.readouterr().out == "assistant (streaming): Hello, "
    follower.print_events([delta(3, "", attempt=2, restarted=True), delta(4, "Hello, world", attempt=2, done=True)])
    follower.print_events([delta(5, "late piece of attempt 1")])
    turn_done = {"event_id": 6, "event_type": "turn.completed", "payload": {}, "created_at": "2026-01-01T00:00:01"}
    follower.print_events([turn_done])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ""  # the first attempt's line ends
    assert lines[1] == "assistant (restarted, attempt 2): Hello, world"
    assert lines[2].endswith("turn.completed") and len(lines) == 3
    assert follower.last_event == 6


def test_watch_shows_hidden_characters_in_deltas(capsys: pytest.CaptureFixture[str]) -> None:
    follower = _Follower(session=None, conversation_id="c")  # type: ignore[arg-type]
    follower.print_events([delta(1, "evil\u202etxt", done=True)])
    out = capsys.readouterr().out
    assert "\u202e" not in out and "\\u202e" in out


def event(event_id: int, event_type: str) -> dict[str, Any]:
    return {"event_id": event_id, "event_type": event_type, "payload": {}, "created_at": "2026-01-01T00:00:01"}


def test_other_lines_wait_for_the_reply_and_a_join_mid_reply_is_marked(capsys: pytest.CaptureFixture[str]) -> None:
    follower = _Follower(session=None, conversation_id="c")  # type: ignore[arg-type]
    follower.print_events([delta(1, "lo, ", offset=3), event(2, "approval.requested"), delta(3, "world", done=True)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "assistant (streaming): … (joined mid-reply) lo, world"
    assert lines[1].endswith("approval.requested") and len(lines) == 2


def test_a_quiet_stream_lets_waiting_lines_out_and_repeats_its_label(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    follower = _Follower(session=None, conversation_id="c")  # type: ignore[arg-type]
    follower.stream = StreamPrinter(clock=lambda: now[0])
    follower.print_events([delta(1, "Hello, "), event(2, "turn.note")])
    follower.stream.release_if_quiet()
    assert capsys.readouterr().out == "assistant (streaming): Hello, "
    now[0] = HOLD_SECONDS
    follower.stream.release_if_quiet()
    follower.print_events([delta(3, "world", done=True)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "" and lines[1].endswith("turn.note")
    assert lines[2] == "assistant (streaming, continued): world" and len(lines) == 3
