"""A Slack message's shortened preview and reason: the summary, the first lines of the diff, the
user's request and the assistant's words, each cut short with a pointer to the card for the rest.

Every text is escaped for Slack (channels/slack_text.py) and cannot close its code block.
"""

from __future__ import annotations

from typing import Any

from channels.slack_text import slack_safe
from core.conversation_model import NotificationInput

DIFF_LINES_SHOWN = 12
DIFF_CHARS_SHOWN = 1200
WHY_CHARS_SHOWN = 300


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def _text(text: str, multiline: bool = False) -> str:
    return slack_safe(text, multiline=multiline)[0]


def preview_blocks(notification: NotificationInput, link: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    why = notification.why
    if why is not None:
        said = [
            f"*{label}* {_text(_short(text, WHY_CHARS_SHOWN))}"
            for label, text in (
                ("Task:", why.parent_task),
                ("Asked:", why.user_message),
                ("Said:", why.assistant_text),
            )
            if text
        ]
        denied = [item for item in why.earlier if item.resolution in ("deny", "expired", "stale")]
        if denied:
            said.append(f"*Earlier:* {len(denied)} call(s) of this conversation not run (the card lists them)")
        if said:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(said)}})
    preview = notification.preview
    if preview is None:
        return blocks
    lines = [f"*Will change:* {_text(preview.summary)}"]
    if preview.changed_since:
        lines.append(f"*{_text(preview.changed_since)}*")
    if preview.note:
        lines.append(_text(preview.note))
    if preview.diff:
        diff = preview.diff.splitlines()
        shown = _short("\n".join(diff[:DIFF_LINES_SHOWN]), DIFF_CHARS_SHOWN)
        more = f"\n… ({len(diff)} lines: <{link}|the card shows them all>)" if len(diff) > DIFF_LINES_SHOWN else ""
        lines.append("```" + _text(shown, multiline=True).replace("```", "`\u200b``") + "```" + more)
    blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}})
    return blocks
