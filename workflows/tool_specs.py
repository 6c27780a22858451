"""The built-in tools as the model sees them, and the checks every call passes before any rule.

Pure and deterministic: the workflow validates a call here, in history-replayable code, so a
malformed call becomes an error result for the model and never reaches a person.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from workflows.models import PermissionType


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    permission_type: PermissionType
    main_argument: str
    properties: dict[str, dict[str, Any]]
    path_arguments: tuple[str, ...] = ()

    @property
    def required(self) -> list[str]:
        return list(self.properties)

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": self.properties,
                    "required": self.required,
                    "additionalProperties": False,
                },
            },
        }


_PATH = {"type": "string", "description": "path relative to the workspace"}

TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("list_dir", "List the entries of a workspace directory.", "read", "path", {"path": _PATH}, ("path",)),
        ToolSpec("read_file", "Read a text file from the workspace.", "read", "path", {"path": _PATH}, ("path",)),
        ToolSpec(
            "write_file",
            "Write text to a workspace file, replacing it.",
            "write",
            "path",
            {"path": _PATH, "content": {"type": "string"}},
            ("path",),
        ),
        ToolSpec(
            "run_shell",
            "Run a shell command with the workspace as its working directory.",
            "execute",
            "command",
            {"command": {"type": "string"}},
        ),
        ToolSpec(
            "kv_set",
            "Remember a JSON value under a key for the rest of the conversation.",
            "state",
            "key",
            {"key": {"type": "string"}, "value": {"description": "any JSON value"}},
        ),
        ToolSpec("kv_get", "Recall a value remembered with kv_set.", "state", "key", {"key": {"type": "string"}}),
    )
}


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


def validate_call(name: str, raw_arguments: str) -> tuple[ToolSpec, dict[str, Any]]:
    """Parse and check one call; raise InvalidToolCall with a message meant for the model."""
    spec = TOOL_SPECS.get(name)
    if spec is None:
        raise InvalidToolCall(f"unknown tool {name!r}; available tools: {', '.join(sorted(TOOL_SPECS))}")
    try:
        arguments = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as err:
        raise InvalidToolCall(f"arguments of {name} are not valid JSON: {err.msg} at position {err.pos}") from None
    if not isinstance(arguments, dict):
        raise InvalidToolCall(f"arguments of {name} must be a JSON object")
    missing = [field for field in spec.required if field not in arguments]
    if missing:
        raise InvalidToolCall(f"{name} is missing required argument(s): {', '.join(missing)}")
    unknown = sorted(set(arguments) - set(spec.properties))
    if unknown:
        raise InvalidToolCall(f"{name} got unexpected argument(s): {', '.join(unknown)}")
    for field, schema in spec.properties.items():
        if schema.get("type") == "string" and not isinstance(arguments[field], str):
            raise InvalidToolCall(f"argument {field!r} of {name} must be a string")
    for field in spec.path_arguments:
        arguments[field] = confined_path(arguments[field])
    return spec, arguments


def main_argument_text(spec: ToolSpec, arguments: dict[str, Any]) -> str:
    value = arguments.get(spec.main_argument, "")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
