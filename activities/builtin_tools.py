"""The built-in tools as the tool activity runs them, and the conversation state they are handed.

Each tool's code is in its definition (core/builtin/), listed in core/tool_specs.py; this is the
activity side's view of that registry, by name."""

from __future__ import annotations

import json
from typing import Any

from activities.tool_text import MAX_RESULT_CHARS, truncate
from activities.workspaces import Workspace
from core.builtin.tool import Heartbeat, Run
from core.tool_specs import BUILTINS

__all__ = ["BUILTIN_TOOLS", "MAX_RESULT_CHARS", "Heartbeat", "KvStore", "ToolFunction", "Workspace", "truncate"]


class KvStore:
    """The conversation's key/value state as a tool sees it: JSON values only."""

    def __init__(self, initial: dict[str, Any]) -> None:
        self.values = dict(initial)
        self.changed = False

    def set(self, key: str, value: Any) -> None:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"kv value for {key!r} is not JSON ({type(value).__name__}): {err}") from None
        self.values[key] = value
        self.changed = True


ToolFunction = Run

BUILTIN_TOOLS: dict[str, ToolFunction] = {tool.name: tool.run for tool in BUILTINS}
