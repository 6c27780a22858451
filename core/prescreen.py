"""The pre-screen's wire types and its one question: may it answer this call at all?

The pre-screen is a model asked about a call the rules would bring to a person and that no
approver rule or M-of-N covers. It answers `allow`, `ask` or `deny`; any failure is an `ask`, so a
broken or slow pre-screen only ever brings a call to a person. Which calls it may answer is a list
of rule patterns in the policy's syntax, matched as an allow rule would match them (every part of
a compound shell command must be covered). Pure: the workflow may call `covers`.

The key never travels: the workflow holds a `PrescreenScope` (patterns, deny limit, model name);
the worker holds the key (config/prescreen_section.py) and asks (activities/prescreen.py).
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import Field

from core.grants import pattern_covers
from core.tool_model import ToolDef
from core.wire_model import WireModel

# The one function the pre-screen model is made to call (tool_choice names it).
PRESCREEN_TOOL = "prescreen_verdict"
# The blocks of the request that hold untrusted data; `{tag}` is a digest of their content, so
# no text inside a block can close it.
ARGUMENTS_BLOCK = "UNTRUSTED TOOL ARGUMENTS {tag}"
USER_MESSAGE_BLOCK = "UNTRUSTED USER MESSAGE {tag}"


class PrescreenScope(WireModel):
    """What the workflow needs of `[prescreen]`, without the key: which calls it may answer, and
    after how many denials in one conversation it is no longer asked."""

    tools: tuple[str, ...]
    deny_limit: int = Field(default=3, ge=1)
    model: str = ""


class _Screened(Protocol):
    @property
    def tools(self) -> tuple[str, ...]: ...


def covers(config: _Screened, tool: str | ToolDef, main_argument: str) -> bool:
    """Whether one of the pre-screen's patterns allows the call as an allow rule would."""
    return any(pattern_covers(pattern, tool, main_argument) for pattern in config.tools)


def data_block(name: str, tag: str, text: str) -> str:
    """Untrusted text between markers that name the block and end with `tag`."""
    label = name.format(tag=tag)
    return f"<<<BEGIN {label}>>>\n{text}\n<<<END {label}>>>"


def read_data_block(message: str, name: str) -> str | None:
    """The text of the first block called `name` in a pre-screen request, or None (the demo model
    reads the call back this way)."""
    label = re.escape(name.format(tag=""))
    block = rf"<<<BEGIN {label}(?P<tag>[0-9a-f]+)>>>\n(?P<text>.*?)\n<<<END {label}(?P=tag)>>>"
    found = re.search(block, message, re.S)
    return found["text"] if found else None
