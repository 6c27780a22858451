"""The tools a turn offers and the checks every call passes before any rule.

Pure and deterministic: the workflow validates a call here, against the JSON schema of the tool
as the turn's catalog recorded it, so a malformed call becomes an error result for the model and
never reaches a person. Built-ins, Python tools and MCP tools are all `ToolDef`s.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from core.models import ToolDef

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

    def validate_call(self, name: str, raw_arguments: str) -> tuple[ToolDef, dict[str, Any]]:
        """Parse and check one call; raise InvalidToolCall with a message meant for the model."""
        tool = self.tools.get(name)
        if tool is None:
            down = [f"{source} ({why})" for source, why in sorted(self.unavailable.items())]
            note = f"; unavailable this turn: {', '.join(down)}" if down else ""
            raise InvalidToolCall(f"unknown tool {name!r}; available tools: {', '.join(sorted(self.tools))}{note}")
        return tool, validate_arguments(tool, raw_arguments)


def validate_arguments(tool: ToolDef, raw_arguments: str) -> dict[str, Any]:
    name = tool.name
    try:
        arguments = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as err:
        raise InvalidToolCall(f"arguments of {name} are not valid JSON: {err.msg} at position {err.pos}") from None
    if not isinstance(arguments, dict):
        raise InvalidToolCall(f"arguments of {name} must be a JSON object")
    schema = tool.parameters
    missing = [field for field in schema.get("required", []) if field not in arguments]
    if missing:
        raise InvalidToolCall(f"{name} is missing required argument(s): {', '.join(missing)}")
    # An argument the schema does not declare is refused unless the schema says it may come: the
    # person approving must see everything the tool will get.
    if schema.get("additionalProperties", False) is False and "properties" in schema:
        unknown = sorted(set(arguments) - set(schema.get("properties", {})))
        if unknown:
            raise InvalidToolCall(f"{name} got unexpected argument(s): {', '.join(unknown)}")
    try:
        error = best_match(Draft202012Validator(schema).iter_errors(arguments))
    except SchemaError as err:
        raise InvalidToolCall(f"the schema of {name} is not valid JSON schema: {err.message}") from None
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "arguments"
        raise InvalidToolCall(f"argument {where!r} of {name} is invalid: {error.message}")
    for field in tool.path_arguments:
        arguments[field] = confined_path(arguments[field])
    return arguments


def main_argument_text(tool: ToolDef, arguments: dict[str, Any]) -> str:
    """What rules glob over: the rule argument as text, or all arguments as canonical JSON."""
    if tool.rule_argument is None:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    value = arguments.get(tool.rule_argument, "")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
