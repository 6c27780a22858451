"""A built-in tool is one spec (core.tool_specs) and one implementation (activities.builtin_tools).

The two tables are keyed by name in two packages; this check, run when the implementations are
imported, makes them one definition: the same names on both sides, and each implementation reading
from its arguments exactly the arguments its spec requires. A drift fails the worker's start, not a
model's call."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from core.models import ToolDef

__all__ = ["BuiltinToolMismatch", "arguments_read", "check_builtin_tools"]

# workspace, kv store, arguments, heartbeat: how activities.tools calls every implementation.
IMPLEMENTATION_PARAMETERS = 4
ARGUMENTS_POSITION = 2


class BuiltinToolMismatch(RuntimeError):
    """The built-in specs and implementations disagree."""


def check_builtin_tools(specs: Mapping[str, ToolDef], implementations: Mapping[str, Callable[..., Any]]) -> None:
    """Raise BuiltinToolMismatch naming every tool that is specified but not implemented (or the
    reverse) and every implementation whose arguments differ from its spec's required ones."""
    problems = []
    missing = sorted(set(specs) - set(implementations))
    extra = sorted(set(implementations) - set(specs))
    if missing:
        problems.append(f"specified but not implemented: {', '.join(missing)}")
    if extra:
        problems.append(f"implemented but not specified: {', '.join(extra)}")
    for name in sorted(set(specs) & set(implementations)):
        problem = _argument_problem(name, specs[name], implementations[name])
        if problem:
            problems.append(problem)
    if problems:
        raise BuiltinToolMismatch("built-in tools disagree with their specs: " + "; ".join(problems))


def _argument_problem(name: str, spec: ToolDef, function: Callable[..., Any]) -> str | None:
    if not inspect.iscoroutinefunction(function):
        return f"{name}: the implementation {function.__qualname__} is not an async function"
    parameters = list(inspect.signature(function).parameters)
    if len(parameters) != IMPLEMENTATION_PARAMETERS:
        return f"{name}: {function.__qualname__} takes ({', '.join(parameters)}), not (workspace, kv, args, beat)"
    required = set(spec.parameters.get("required", []))
    read = arguments_read(function)
    if read != required:
        return (
            f"{name}: the spec requires {sorted(required)} but {function.__qualname__} reads {sorted(read)} "
            "from its arguments"
        )
    return None


def arguments_read(function: Callable[..., Any]) -> set[str]:
    """The keys a function reads from its arguments parameter (`args["key"]` or `args.get("key")`)."""
    name = list(inspect.signature(function).parameters)[ARGUMENTS_POSITION]
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_name(node.value, name):
            keys |= _constant_key(node.slice)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _is_name(node.func.value, name)
            and node.args
        ):
            keys |= _constant_key(node.args[0])
    return keys


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _constant_key(node: ast.expr) -> set[str]:
    return {node.value} if isinstance(node, ast.Constant) and isinstance(node.value, str) else set()
