"""Hidden characters are shown escaped and flagged at every door, while the bytes that run stay the same."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from cli.conversations import transcript_lines
from cli.output import HIDDEN_FLAG, tool_call_text
from cli.watch import event_line
from config.settings import Settings
from core.visible import is_hidden, reveal
from tests.support.helpers import rows
from tests.support.processes import REPO_ROOT, process_env
from tests.support.ui_fixtures import seed_pending

OVERRIDE = "echo safe \u202e; touch X #"


def test_a_right_to_left_override_is_escaped_and_flagged() -> None:
    shown = reveal(OVERRIDE)
    assert shown == ("echo safe \\u202e; touch X #", True)


def test_the_named_invisible_characters_are_all_hidden() -> None:
    named = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0x200B, 0x2010), 0x2060, 0xFEFF]
    named += [0x00, 0x07, 0x1B, 0x7F, 0x85, 0xAD, 0x2028, 0x2029, 0xE0041, 0xFE0F, 0x3164, 0x00A0, 0x3000]
    assert [hex(c) for c in named if not is_hidden(chr(c))] == []
    assert [c for c in "plain ASCII, é, 日本, emoji 🙂, tab\tand newline\n" if is_hidden(c)] == []


def test_layout_is_kept_in_multiline_text_and_written_out_on_one_line() -> None:
    assert reveal("a\nb\tc", multiline=True) == ("a\nb\tc", False)
    assert reveal("a\nb\tc") == ("a\\nb\\tc", False)


@given(st.text())
def test_reveal_leaves_nothing_hidden_and_flags_exactly_when_something_was(text: str) -> None:
    shown = reveal(text, multiline=True)
    assert [c for c in shown.text if is_hidden(c)] == []
    assert shown.hidden == any(is_hidden(c) for c in text)
    if not shown.hidden:
        assert shown.text == text


def test_unassigned_code_points_are_hidden() -> None:
    unassigned = next(chr(c) for c in range(0x0378, 0x10FFFF) if unicodedata.category(chr(c)) == "Cn")
    assert reveal(f"a{unassigned}b").hidden


def test_cli_tool_call_line_escapes_and_flags_but_the_arguments_are_untouched() -> None:
    arguments = {"command": OVERRIDE}
    line = tool_call_text("run_shell", arguments)
    assert line.startswith(HIDDEN_FLAG)
    assert "\\u202e" in line and "\u202e" not in line
    assert arguments == {"command": OVERRIDE}
    assert tool_call_text("run_shell", {"command": "ls"}) == 'run_shell {"command": "ls"}'
    assert HIDDEN_FLAG in tool_call_text("run\u200bshell", {"command": "ls"})


def test_cli_transcript_and_watch_lines_flag_hidden_characters() -> None:
    message = {"role": "assistant", "content": "I will run \u2066this\u2069", "tool_calls": []}
    [line] = transcript_lines(message)
    assert HIDDEN_FLAG in line and "\\u2066this\\u2069" in line
    event = {"created_at": "2026-01-01T00:00:00", "event_type": "permission.request", "payload": {"x": "\u202e"}}
    assert HIDDEN_FLAG in event_line(event)
    assert json.loads(json.dumps(event["payload"])) == {"x": "\u202e"}


async def test_pending_prints_the_override_escaped_and_flagged(settings: Settings) -> None:
    await seed_pending(settings, "conv-hidden", "call_1", "run_shell", {"command": OVERRIDE})
    done = subprocess.run(
        [sys.executable, "starter.py", "pending"],
        cwd=REPO_ROOT, env=process_env(settings, "127.0.0.1:9"), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [row] = [line for line in done.stdout.splitlines() if "perm_conv-hidden_call_1" in line]
    assert HIDDEN_FLAG in row and "echo safe \\u202e; touch X #" in row and "\u202e" not in done.stdout
    stored = json.loads(rows(settings.approvals_db, "SELECT details_json FROM ui_pending_approvals")[0]["details_json"])
    assert stored["arguments"] == {"command": OVERRIDE}
