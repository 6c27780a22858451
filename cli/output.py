"""What the CLI prints: tables for people, one JSON document for scripts, escaped model text.

Text a model wrote (tool arguments, messages) is untrusted: it is shown through visible.reveal,
with every control or invisible character escaped (so it can never move the cursor, recolour the
terminal, reorder a line or hide a word) and flagged when it held any. --json prints the bytes as
they are, JSON-encoded.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from core.visible import reveal

HIDDEN_FLAG = "[contains hidden characters, shown escaped]"


def safe(text: object, keep_newlines: bool = False) -> str:
    """Escape every hidden character (ANSI escapes, bidi overrides, zero-width characters)."""
    return reveal(str(text), multiline=keep_newlines).text


def shown(text: object, keep_newlines: bool = False) -> str:
    """safe(), led by HIDDEN_FLAG when the text held a hidden character, so no one misses it."""
    revealed = reveal(str(text), multiline=keep_newlines)
    return f"{HIDDEN_FLAG} {revealed.text}" if revealed.hidden else revealed.text


def tool_call_text(tool_name: str, arguments: Any) -> str:
    """The tool and its arguments exactly as they will run: the name, then the arguments as JSON."""
    if isinstance(arguments, str):
        return shown(f"{tool_name} {arguments}")
    return shown(f"{tool_name} {json.dumps(arguments, ensure_ascii=False)}")


def tool_origin_text(tool: dict[str, Any]) -> str:
    """Where a tool comes from: `builtin`, `python MODULE`, `mcp SERVER`; flagged when it changed."""
    source = str(tool.get("source", "builtin"))
    text = source if source == "builtin" else f"{source} {tool.get('origin', '?')}"
    return text + (" (changed since always-allowed)" if tool.get("changed") else "")


def short_time(iso: str | None) -> str:
    """2026-11-30T08:10:03.123+00:00 -> 2026-11-30 08:10:03 (UTC, as stored)."""
    if not iso:
        return "-"
    return iso.replace("T", " ")[:19]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[safe(cell) for cell in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def note(text: str) -> None:
    """A hint for a person; on stderr so stdout stays clean for scripts."""
    print(text, file=sys.stderr)


def more_pages(cursor: str | None) -> None:
    """After a page that is not the last, say on stderr how to get the next (stdout stays the page)."""
    if cursor is not None:
        note(f"More: repeat with --after {cursor}")
