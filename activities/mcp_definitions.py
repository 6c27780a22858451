"""What an MCP server's answers become here: tool definitions under mcp__SERVER__TOOL names, and
call results as the text the model reads."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from activities.builtin_tools import truncate
from config.tools_section import McpServerConfig
from core.tool_model import PermissionType, ToolDef
from core.tool_run_model import ToolResult

if TYPE_CHECKING:
    import mcp_types

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


def mcp_tool_name(server: str, tool: str) -> str:
    """How an MCP tool reaches the model and the rules: mcp__SERVER__TOOL, in the characters
    function names may use."""
    return f"mcp__{_UNSAFE_NAME.sub('_', server)}__{_UNSAFE_NAME.sub('_', tool)}"[:64]


def _rule_argument(schema: dict[str, Any], configured: str | None) -> str | None:
    if configured is not None:
        return configured
    properties = schema.get("properties") or {}
    for field in schema.get("required") or []:
        if (properties.get(field) or {}).get("type") == "string":
            return str(field)
    return None


def tool_definition(server: str, config: McpServerConfig, tool: mcp_types.Tool) -> ToolDef:
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    permission: PermissionType = "read" if read_only else ("network" if hints and hints.open_world_hint else "write")
    schema = dict(tool.input_schema or {"type": "object"})
    schema.setdefault("type", "object")
    annotations = hints.model_dump(by_alias=True, exclude_none=True) if hints else {}
    return ToolDef(
        name=mcp_tool_name(server, tool.name),
        description=tool.description or tool.title or tool.name,
        parameters=schema,
        permission_type=permission,
        rule_argument=_rule_argument(schema, config.rule_arguments.get(tool.name)),
        source="mcp",
        origin=server,
        remote_name=tool.name,
        annotations=annotations,
        # Annotations never loosen a rule; they only spare a read-only tool the at-most-once guard.
        at_most_once=not read_only,
    )


def result_text(result: mcp_types.CallToolResult) -> ToolResult:
    """Text and structured content kept; other content summarised."""
    import mcp_types  # loaded with the connection that produced the result

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content not shown]")
    structured = result.structured_content
    # A plain function's return value comes twice (as text and as {"result": text}): keep one.
    if structured is not None and structured != {"result": "\n".join(parts)}:
        parts.append(json.dumps(structured, sort_keys=True))
    text = "\n".join(parts) or "(no content)"
    if result.is_error:
        return ToolResult(content=truncate(f"Error from the tool: {text}"), is_error=True)
    return ToolResult(content=truncate(text))
