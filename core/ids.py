"""Conversation ids: a documented alphabet, so request ids can never collide.

A request id is `perm_{conversation_id}_{tool_call_id}`. Tool call ids may hold `_`, so a
conversation id that holds one makes two different requests share an id (`conv-a` with
`call_1_call_2`, `conv-a_call_1` with `call_2`). Conversation ids therefore never hold `_`: the
first `_` after `perm_` ends the conversation id. No `/` either, so every id is one URL path
segment. Ids are refused at start, at every door; conversations started earlier keep their ids.
"""

from __future__ import annotations

import re

CONVERSATION_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9.-]{0,127}"
CONVERSATION_ID_RULE = (
    "a conversation id is 1 to 128 letters, digits, '-' or '.', starting with a letter or digit (no '_', no '/')"
)
_CONVERSATION_ID = re.compile(CONVERSATION_ID_PATTERN)


class InvalidConversationId(ValueError):
    """A new conversation's id is outside the alphabet; the message says which rule it broke."""


def check_conversation_id(conversation_id: str) -> str:
    """The id unchanged when a new conversation may take it; InvalidConversationId otherwise."""
    if not _CONVERSATION_ID.fullmatch(conversation_id):
        raise InvalidConversationId(f"invalid conversation id {conversation_id[:140]!r}: {CONVERSATION_ID_RULE}")
    return conversation_id
