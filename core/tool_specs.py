"""The built-in tools, defined once as registry entries; the checks live in core.tool_registry and
core.tool_arguments."""

from __future__ import annotations

from typing import Any

from core.models import PermissionType, ToolDef
from core.tool_registry import Catalog, InvalidToolCall, confined_path, main_argument_text

__all__ = ["BUILTIN_CATALOG", "TOOL_SPECS", "InvalidToolCall", "confined_path", "main_argument_text"]

_PATH = {"type": "string", "description": "path relative to the workspace"}


def _builtin(
    name: str,
    description: str,
    permission_type: PermissionType,
    rule_argument: str,
    properties: dict[str, dict[str, Any]],
    **extra: Any,
) -> ToolDef:
    return ToolDef(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
        permission_type=permission_type,
        rule_argument=rule_argument,
        at_most_once=permission_type in ("write", "execute"),
        **extra,
    )


TOOL_SPECS: dict[str, ToolDef] = {
    tool.name: tool
    for tool in (
        _builtin(
            "list_dir",
            "List the entries of a workspace directory.",
            "read",
            "path",
            {"path": _PATH},
            path_arguments=["path"],
        ),
        _builtin(
            "read_file",
            "Read a text file from the workspace.",
            "read",
            "path",
            {"path": _PATH},
            path_arguments=["path"],
        ),
        _builtin(
            "write_file",
            "Write text to a workspace file, replacing it.",
            "write",
            "path",
            {"path": _PATH, "content": {"type": "string"}},
            path_arguments=["path"],
        ),
        _builtin(
            "run_shell",
            "Run a shell command with the workspace as its working directory.",
            "execute",
            "command",
            {"command": {"type": "string"}},
            splitter="shell",
        ),
        _builtin(
            "kv_set",
            "Remember a JSON value under a key for the rest of the conversation.",
            "state",
            "key",
            {"key": {"type": "string"}, "value": {"description": "any JSON value"}},
        ),
        _builtin("kv_get", "Recall a value remembered with kv_set.", "state", "key", {"key": {"type": "string"}}),
    )
}

BUILTIN_CATALOG = Catalog(TOOL_SPECS.values())
