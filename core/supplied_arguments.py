"""Arguments only a person supplies (`supplied_by_approver`): a secret such as a password, which the
model never sees, offers or fills; the approver types it when approving the call.

Pure. What is configured is applied to the turn's tools here (the catalog the workflow records
holds the names, never a value); the value itself travels sealed from the door to the tool's
activity (config/supplied_secret.py) and is recorded only as "supplied by whom".
"""

from __future__ import annotations

from collections.abc import Iterable

from core.tool_model import ToolDef

# A tool no person can be asked about cannot take a supplied argument: its calls run unasked.
UNASKABLE_SOURCES = ("builtin", "subagent")


def with_supplied(tools: Iterable[ToolDef], wanted: dict[str, list[str]]) -> tuple[list[ToolDef], dict[str, str]]:
    """The tools with the supplied arguments configured for them (tool name -> argument names), and
    the tools left out because their configuration cannot hold (named, with why): a misspelt
    argument would leave the real one for the model to fill, so the tool is not offered at all."""
    offered: list[ToolDef] = []
    left_out: dict[str, str] = {}
    for tool in tools:
        names = sorted(set(wanted.get(tool.name, [])))
        if not names:
            offered.append(tool)
            continue
        why = _why_not(tool, names)
        if why is not None:
            left_out[tool.name] = why
            continue
        # Rules never glob over a value the model does not give: they match the other arguments.
        rule_argument = None if tool.rule_argument in names else tool.rule_argument
        offered.append(tool.model_copy(update={"supplied_by_approver": names, "rule_argument": rule_argument}))
    return offered, left_out


def _why_not(tool: ToolDef, names: list[str]) -> str | None:
    if tool.source in UNASKABLE_SOURCES:
        return f"supplied_by_approver: a {tool.source} tool takes no supplied arguments"
    known = set((tool.parameters.get("properties") or {}).keys())
    unknown = [name for name in names if name not in known]
    if unknown:
        return f"supplied_by_approver names {', '.join(unknown)}, which {tool.name} does not take"
    return None


def supplied_text(supplied_by: dict[str, str]) -> str:
    """`supplied: password (by alice)`: that a value was supplied, and by whom, never the value."""
    people: dict[str, list[str]] = {}
    for name, person in sorted(supplied_by.items()):
        people.setdefault(person, []).append(name)
    return "supplied: " + "; ".join(f"{', '.join(names)} (by {person})" for person, names in people.items())


def supplied_note(supplied_by: dict[str, str]) -> str:
    """What the model reads before the result of a call it could not complete itself."""
    listed = "; ".join(f"{name}: supplied by {person}" for name, person in sorted(supplied_by.items()))
    return f"Note: a person supplied what you could not give when approving this call ({listed}); not shown to you."


def not_repeatable(request_id: str, names: list[str]) -> str:
    """Why a call with supplied arguments cannot stand for calls not yet made (always-allow, a grant)."""
    return f"{request_id} needs {', '.join(names)} supplied by a person on every call: approve this call alone"
