"""Declare your own tools: `from approvals_tools import tool`.

A module named under `python_tools` in the configuration file declares tools with `@tool`. The
schema the model sees comes from the type hints and the docstring (through pydantic); the
permission type and the argument the rules match are given to the decorator. The worker runs each
call as an activity, with heartbeats and a timeout, after the same rules and approvals as a
built-in tool.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

Permission = Literal["read", "write", "execute", "network", "state"]
F = TypeVar("F", bound=Callable[..., Any])
TOOL_ATTRIBUTE = "__approvals_tool__"
_ARG_LINE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


@dataclass(frozen=True)
class PythonTool:
    """One decorated function and what the decorator was told about it."""

    function: Callable[..., Any]
    name: str
    description: str
    permission: Permission
    rule_argument: str | None
    timeout_seconds: float
    arguments: type[BaseModel]

    def parameters(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema["additionalProperties"] = False
        return schema


def _docstring(function: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The summary (everything before an `Args:` section) and each argument's line in it."""
    text = inspect.getdoc(function) or ""
    summary, _, args_block = text.partition("\nArgs:")
    described: dict[str, str] = {}
    for line in args_block.splitlines():
        match = _ARG_LINE.match(line)
        if match:
            described[match.group(1)] = match.group(2).strip()
    return " ".join(summary.split()), described


def _arguments_model(function: Callable[..., Any], name: str, described: dict[str, str]) -> type[BaseModel]:
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs cannot be described to a model")
        if parameter.name not in hints:
            raise TypeError(f"tool {name}: argument {parameter.name!r} needs a type hint")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (hints[parameter.name], Field(default, description=described.get(parameter.name)))
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def tool(
    *,
    permission: Permission,
    rule_argument: str | None = None,
    name: str | None = None,
    timeout_seconds: float = 60.0,
) -> Callable[[F], F]:
    """Mark a function (sync or async) as a tool. It returns text, or anything JSON can encode.

    `rule_argument` names the argument rules glob over (`my_tool(glob)`); without it rules match
    the canonical JSON of all arguments.
    """

    def mark(function: F) -> F:
        tool_name = name or function.__name__
        summary, described = _docstring(function)
        if not summary:
            raise TypeError(f"tool {tool_name}: a docstring is needed; it is the description the model reads")
        model = _arguments_model(function, tool_name, described)
        if rule_argument is not None and rule_argument not in model.model_fields:
            raise TypeError(f"tool {tool_name}: rule_argument {rule_argument!r} is not one of its arguments")
        setattr(
            function,
            TOOL_ATTRIBUTE,
            PythonTool(function, tool_name, summary, permission, rule_argument, timeout_seconds, model),
        )
        return function

    return mark


def tools_of(module: Any) -> list[PythonTool]:
    """Every tool a module declares, in definition order."""
    found = [getattr(value, TOOL_ATTRIBUTE) for value in vars(module).values() if hasattr(value, TOOL_ATTRIBUTE)]
    return [entry for entry in found if isinstance(entry, PythonTool)]
