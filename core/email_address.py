"""What counts as an email address here: `local@domain`, one line, nothing a mail header could be
bent with. Checked where an address comes in (a channel's `to`, `starter.py users ... --email`), so
a typo is a one-line error at once, not a bounce days later while a request waits."""

from __future__ import annotations

import re

_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_ADDRESS = re.compile(rf"{_LOCAL}@{_LABEL}(?:\.{_LABEL})*")
MAX_ADDRESS = 254  # RFC 5321's limit on a path


def is_address(text: str) -> bool:
    """Whether text is meant as an address (it has an @), as opposed to a person's name."""
    return "@" in text


def checked_address(text: str) -> str:
    """The address, stripped; ValueError in one line when it is not one."""
    address = text.strip()
    if len(address) > MAX_ADDRESS or _ADDRESS.fullmatch(address) is None:
        raise ValueError(f"{address[:80]!r} is not an email address (local@domain)")
    return address
