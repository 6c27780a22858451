"""The check every call passes before any rule: its arguments against its tool's JSON schema.

Pure and deterministic: the workflow validates a call here, against the schema of the tool as the
turn's catalog recorded it, so a malformed call becomes an error result for the model and never
reaches a person; an edit's arguments pass the same check. Apart from core.tool_registry so that
what only reads rules (the CLI's pre-checks, the claims) does not load the validator, a sixth of a
CLI run's start.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from core.tool_model import ToolDef
from core.tool_registry import Catalog, InvalidToolCall, confined_path


def validate_call(catalog: Catalog, name: str, raw_arguments: str) -> tuple[ToolDef, dict[str, Any]]:
    """Parse and check one call; raise InvalidToolCall with a message meant for the model."""
    tool = catalog.known(name)
    return tool, validate_arguments(tool, raw_arguments)


def validate_arguments(tool: ToolDef, raw_arguments: str) -> dict[str, Any]:
    name = tool.name
    try:
        arguments = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as err:
        raise InvalidToolCall(f"arguments of {name} are not valid JSON: {err.msg} at position {err.pos}") from None
    if not isinstance(arguments, dict):
        raise InvalidToolCall(f"arguments of {name} must be a JSON object")
    filled = [field for field in tool.supplied_by_approver if field in arguments]
    if filled:  # named, never echoed: the value is a secret the model must not hold
        raise InvalidToolCall(
            f"{name} was called with {', '.join(filled)}, which a person supplies when approving it; call it without"
        )
    schema = tool.offered_parameters()
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
