"""An mkdocs hook: a `|` written as `\\|` inside code in a table cell shows as `|` in the site.

GitHub's tables need the pipe escaped even inside a code span, Python-Markdown keeps the escape
literally, so the same page reads right in both only when the site drops the backslash.
"""

from __future__ import annotations

import re
from typing import Any

TABLE_CELL = re.compile(r"<td[^>]*>.*?</td>", re.DOTALL)
INLINE_CODE = re.compile(r"<code>.*?</code>", re.DOTALL)


def unescape_cell(cell: re.Match[str]) -> str:
    """The cell with `\\|` turned into `|` inside its code spans."""
    return INLINE_CODE.sub(lambda code: code.group(0).replace("\\|", "|"), cell.group(0))


def on_page_content(html: str, **_: Any) -> str:
    """Called by mkdocs with each page's HTML."""
    return TABLE_CELL.sub(unescape_cell, html)
