"""Untrusted text as Slack shows it: the same escaping as the card and the CLI, plus Slack's own.

Slack renders a right-to-left override or a zero-width space as the card would if it did not
escape them, so a command can read as something else right beside the Allow button. Every piece
of model-written text in a Slack message (tool names, arguments, request ids) goes through
slack_safe(): hidden characters become `\\u202e` escapes (visible.reveal, the card's rule) and
Slack's control characters `&`, `<`, `>` become entities, so text cannot open a link or a mention.
"""

from __future__ import annotations

from core.visible import reveal

HIDDEN_NOTE = ":warning: contains hidden characters, shown escaped"
_SLACK_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def slack_entities(text: str) -> str:
    return "".join(_SLACK_ENTITIES.get(char, char) for char in text)


def slack_safe(text: str, multiline: bool = False) -> tuple[str, bool]:
    """(text safe to put in a Slack mrkdwn block, whether it held hidden characters)."""
    revealed = reveal(text, multiline=multiline)
    return slack_entities(revealed.text), revealed.hidden
