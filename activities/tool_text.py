"""The shape of a tool's text result: bounded, so one huge output cannot pass Temporal's payload limits."""

from __future__ import annotations

MAX_RESULT_CHARS = 16_000


def truncate(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Keep one huge output from pushing a payload past Temporal's limits."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated: {len(text) - limit} more characters not shown ...]"


def byte_size(count: int) -> str:
    """A size as people read it: 512 bytes, 4 MiB, 3.0 GiB."""
    if count < 1024:
        return f"{count} bytes"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
