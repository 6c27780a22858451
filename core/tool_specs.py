"""The registry of built-in tools: one line per definition (core/builtin/), and what the rest reads
from them: their specs by name, the catalog, and a tool looked up by name for its capabilities."""

from __future__ import annotations

from core.builtin import file_info, kv_get, kv_set, list_dir, read_file, run_shell, write_file
from core.builtin.tool import BuiltinTool
from core.tool_model import ToolDef
from core.tool_registry import Catalog, InvalidToolCall, confined_path, main_argument_text

__all__ = [
    "BUILTINS",
    "BUILTIN_CATALOG",
    "TOOL_SPECS",
    "UNDO_TOOL",
    "BuiltinTool",
    "InvalidToolCall",
    "builtin_tool",
    "confined_path",
    "main_argument_text",
]

# The order the model sees them in.
BUILTINS: tuple[BuiltinTool, ...] = (
    list_dir.TOOL,
    read_file.TOOL,
    write_file.TOOL,
    run_shell.TOOL,
    kv_set.TOOL,
    kv_get.TOOL,
    file_info.TOOL,
)

_BY_NAME: dict[str, BuiltinTool] = {tool.name: tool for tool in BUILTINS}
if len(_BY_NAME) != len(BUILTINS):
    raise ValueError("two built-in tools share a name")

TOOL_SPECS: dict[str, ToolDef] = {tool.name: tool.spec for tool in BUILTINS}
BUILTIN_CATALOG = Catalog(TOOL_SPECS.values())


def builtin_tool(name: str) -> BuiltinTool | None:
    """The built-in tool of that name, for its capabilities; None for any other tool (no other
    source may take a built-in's name: activities/python_tools.py, MCP's `mcp__` prefix)."""
    return _BY_NAME.get(name)


def _the_undo_tool() -> BuiltinTool:
    undoable = [tool for tool in BUILTINS if tool.undo]
    if len(undoable) != 1:
        raise ValueError(f"an undo restores a file with the one undoable built-in; found {len(undoable)}")
    return undoable[0]


# An undo (workflows/undo.py) restores what an approved call replaced with a call of this tool.
UNDO_TOOL = _the_undo_tool()
