"""The line people read when a conversation's tool waits for a host no worker polls.

One wording for `show`, `conversations`, the inbox's list and the conversation view, so a person
never sees a conversation wait in silence, and reads the same words wherever they look. The wait
is the `conversation.host_waiting` payload (core/hosts.py) as the projection keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def clock(iso: object) -> str | None:
    """10:02:03 (UTC) for an ISO time; None for no time; the text itself when it is not one."""
    if not iso:
        return None
    try:
        moment = datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%H:%M:%S")


def host_wait_text(wait: Mapping[str, Any]) -> str:
    """`waiting for host pod-a: no worker since 10:02:03; moving at 10:04:03`."""
    last_poll = clock(wait.get("last_poll"))
    polled = f"no worker since {last_poll}" if last_poll else "no worker has polled it"
    text = f"waiting for host {wait.get('host') or '?'}: {polled}"
    moves_at = clock(wait.get("moves_at"))
    return f"{text}; moving at {moves_at}" if moves_at else text
