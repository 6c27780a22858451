"""Handler payloads: each signal and update takes one JSON payload, validated without raising.

Handlers get plain JSON values; validating here, never raising, keeps a malformed signal from
failing the workflow task: it is dropped (logged) and changes nothing. Shared by every workflow
that takes decisions (the conversation and the approval request).
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

DECIDE_SHAPE = "decide takes one payload {request_id, decision, reason?, decided_by?, args_hash?, door?}"
EXTEND_SHAPE = "extend takes one payload {request_id, seconds, reason?, decided_by?, door?}"

_Input = TypeVar("_Input", bound=BaseModel)


def one_payload(handler: str, args: tuple[Any, ...], model: type[_Input]) -> _Input | None:
    """The handler's one payload as `model`, or None (logged) for any other number or shape."""
    if len(args) == 1:
        try:
            return model.model_validate(args[0])
        except ValidationError as err:
            problem = f"{err.error_count()} invalid field(s): {_short(err.errors(include_input=False))}"
    else:
        problem = f"{len(args)} payloads instead of one"
    workflow.logger.warning("%s ignored: %s; got %s", handler, problem, _short(tuple(map(_unsupplied, args))))
    return None


def _unsupplied(arg: Any) -> Any:
    """A payload as it may be logged: the values a person supplied (a secret, sealed or not) named only."""
    if isinstance(arg, dict) and isinstance(arg.get("supplied"), dict):
        return {**arg, "supplied": {str(name): "(not shown)" for name in arg["supplied"]}}
    return arg


def _short(value: object, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"
