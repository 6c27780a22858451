"""What a person may not see: characters that change how text looks without showing themselves.

A right-to-left override can make `echo safe; touch X #` read as a harmless echo; a zero-width
space can split a word a rule looks for. Every door (the CLI, the inbox page) shows untrusted text
through reveal(): such characters appear as `\\u202e` escapes and the text is flagged, while the
bytes that run stay exactly as the model wrote them. ui/static/render.js mirrors this function.
"""

from __future__ import annotations

import unicodedata
from typing import NamedTuple

# Control (Cc), format (Cf: bidi overrides and isolates, zero-width characters, BOM, tags),
# surrogates, private use, unassigned, and the line/paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Blank-looking characters outside those categories: Hangul fillers, the Mongolian vowel
# separator, the combining grapheme joiner, Khmer inherent vowels, braille blank, variation selectors.
BLANK_LOOKING = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x2800, 0x3164, 0xFFA0})
VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
LAYOUT = {"\n": "\\n", "\t": "\\t"}


class Revealed(NamedTuple):
    text: str  # safe to print: every hidden character escaped
    hidden: bool  # whether the original held any hidden character


def is_hidden(char: str) -> bool:
    """Whether a character can change or hide what a person reads. Newline and tab are not:
    they show as layout. Every space other than U+0020 counts, since it only looks like one."""
    if char in LAYOUT:
        return False
    code = ord(char)
    category = unicodedata.category(char)
    if category in HIDDEN_CATEGORIES or (category == "Zs" and code != 0x20) or code in BLANK_LOOKING:
        return True
    return any(low <= code <= high for low, high in VARIATION_SELECTORS)


def escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def reveal(text: str, multiline: bool = False) -> Revealed:
    """text with hidden characters escaped; newline and tab kept when multiline, else written as
    `\\n` and `\\t` (layout, not hidden: they do not set the flag)."""
    out: list[str] = []
    hidden = False
    for char in text:
        if char in LAYOUT:
            out.append(char if multiline else LAYOUT[char])
        elif is_hidden(char):
            hidden = True
            out.append(escape(char))
        else:
            out.append(char)
    return Revealed("".join(out), hidden)
