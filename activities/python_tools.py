"""The user's Python tools: imported from the modules the configuration names, run in the worker.

Trusted code. A Python tool is not sandboxed: it runs inside the worker process, with the
worker's user (root, if the worker was started as root), its whole filesystem, its network and
its environment (OPENAI_API_KEY, the database URLs, every secret the worker holds). The workspace
and the sandbox rules of run_shell do not apply to it; only the approval rules decide whether it
runs. List a module in `python_tools` only if you would run its code as the worker yourself, and
have a tool that touches files or runs commands do so through a confined path of its own.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from activities.builtin_tools import truncate
from activities.heartbeat import heartbeating
from approvals_tools import PythonTool, tools_of
from core.tool_model import ToolDef
from core.tool_run_model import ToolResult
from core.tool_specs import TOOL_SPECS


class PythonToolError(ValueError):
    """A module that cannot serve as a tool source (import error, a clash of names)."""


def load_python_tools(modules: list[str]) -> dict[str, tuple[str, PythonTool]]:
    """name -> (module, tool) for every tool the modules declare; names must be unique."""
    found: dict[str, tuple[str, PythonTool]] = {}
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except Exception as err:
            raise PythonToolError(f"python_tools module {module_name!r} cannot be imported: {err}") from err
        for entry in tools_of(module):
            if entry.name in TOOL_SPECS or entry.name in found or entry.name.startswith("mcp__"):
                raise PythonToolError(f"tool name {entry.name!r} of {module_name} is already taken")
            found[entry.name] = (module_name, entry)
    return found


def python_tool_definition(module_name: str, entry: PythonTool) -> ToolDef:
    return ToolDef(
        name=entry.name,
        description=entry.description,
        parameters=entry.parameters(),
        permission_type=entry.permission,
        rule_argument=entry.rule_argument,
        source="python",
        origin=module_name,
        at_most_once=entry.permission in ("write", "execute", "network"),
    )


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


async def run_python_tool(entry: PythonTool, arguments: dict[str, Any], beat: Callable[[], None]) -> ToolResult:
    """Check the arguments with the tool's own model, call it within its timeout, heartbeating."""
    try:
        parsed = entry.arguments.model_validate(arguments)
    except ValidationError as err:
        # Where and what, never the input: an argument may be a value a person supplied (a secret).
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in err.errors())
        return ToolResult(content=f"Error: invalid arguments for {entry.name}: {problems}", is_error=True)
    values = {field: getattr(parsed, field) for field in type(parsed).model_fields}
    if inspect.iscoroutinefunction(entry.function):
        call = entry.function(**values)
    else:
        # A blocking function runs on a thread so heartbeats keep flowing; a timeout abandons it.
        call = asyncio.to_thread(entry.function, **values)
    try:
        value = await heartbeating(asyncio.wait_for(call, entry.timeout_seconds), beat)
    except TimeoutError:
        return ToolResult(
            content=f"Error: {entry.name} ran longer than {entry.timeout_seconds:g} seconds", is_error=True
        )
    except Exception as err:
        return ToolResult(content=f"Error: {entry.name} failed: {type(err).__name__}: {err}", is_error=True)
    return ToolResult(content=truncate(_as_text(value)))
