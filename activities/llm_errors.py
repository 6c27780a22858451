"""Telling a context-window error apart from any other refusal of the model's server.

OpenAI answers 400 with the code `context_length_exceeded`; other servers say it in words (vLLM,
llama.cpp, Ollama, Azure, Anthropic- and Gemini-compatible endpoints) or answer 413.
"""

from __future__ import annotations

import re

CONTEXT_ERROR_CODES = frozenset(
    {"context_length_exceeded", "string_above_max_length", "exceed_context_size_error", "context_window_exceeded"}
)
_CONTEXT_PHRASES = re.compile(
    r"context[ _-]?(?:length|window|size)"
    r"|maximum (?:context|input) length"
    r"|prompt is too long"
    r"|too many (?:input )?tokens"
    r"|input (?:is )?too long"
    r"|reduce the length of the (?:messages|input|prompt)"
    r"|exceeds? the (?:maximum|max) (?:number of )?(?:input )?tokens",
    re.IGNORECASE,
)


def is_context_window_error(status: int | None, code: str | None, message: str) -> bool:
    if code is not None and code.lower() in CONTEXT_ERROR_CODES:
        return True
    if status == 413:
        return True
    return status in (400, 422) and bool(_CONTEXT_PHRASES.search(message))
