"""The tools a turn offers, the path rule every path argument obeys, and the text rules match.

Pure and deterministic. Built-ins, Python tools and MCP tools are all `ToolDef`s; a call's
arguments are checked against its tool's schema in core.tool_arguments (the one module that needs
a JSON-schema validator, so the doors' rules load without one).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from typing import Any

from core.tool_model import ToolDef

# The name of the system note that tells the model (and the inbox) which tool sources failed this turn.
TOOLS_UNAVAILABLE_NAME = "tools_unavailable"


class InvalidToolCall(ValueError):
    """A call the model got wrong; its message goes back to the model as the tool result."""


def confined_path(raw: Any) -> str:
    """Normalise a workspace-relative path, refusing anything that could leave the workspace."""
    if not isinstance(raw, str) or raw.strip() == "":
        raise InvalidToolCall("path must be a non-empty string")
    if "\x00" in raw:
        raise InvalidToolCall("path contains a NUL byte")
    if raw.startswith("/") or raw.startswith("~"):
        raise InvalidToolCall(f"path {raw!r} is outside the workspace: use a relative path")
    normal = posixpath.normpath(raw)
    if normal == ".." or normal.startswith("../"):
        raise InvalidToolCall(f"path {raw!r} is outside the workspace")
    return normal


class Catalog:
    """The tools of one turn by name, with what the model is told about sources that are down."""

    def __init__(self, tools: Iterable[ToolDef], unavailable: dict[str, str] | None = None) -> None:
        self.tools: dict[str, ToolDef] = {tool.name: tool for tool in tools}
        self.unavailable = dict(unavailable or {})

    def get(self, name: str) -> ToolDef | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.openai_schema() for tool in self.tools.values()]

    def known(self, name: str) -> ToolDef:
        """The tool a call names; InvalidToolCall, with what the model may use instead, when none."""
        tool = self.tools.get(name)
        if tool is None:
            down = [f"{source} ({why})" for source, why in sorted(self.unavailable.items())]
            note = f"; unavailable this turn: {', '.join(down)}" if down else ""
            raise InvalidToolCall(f"unknown tool {name!r}; available tools: {', '.join(sorted(self.tools))}{note}")
        return tool


def main_argument_text(tool: ToolDef, arguments: dict[str, Any]) -> str:
    """What rules glob over: the rule argument as text, or all arguments as canonical JSON."""
    if tool.rule_argument is None:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    value = arguments.get(tool.rule_argument, "")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
