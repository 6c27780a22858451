"""Approval fatigue: calls people approve every time, quickly, and the rule that would spare them.

From the audit, the approved calls of each tool are grouped by where they act (the first
directory of a path, the first two words of a command); a group approved at least `min_count`
times, with no call of that tool matching its rule ever denied or edited, and a median decision
under `max_median_seconds`, becomes a candidate: the narrowest allow rule covering those calls
(their common directory, `notes/**`, or command prefix, `git status*`), how many past calls it
covers (judged by the policy's own matcher) and which approved calls of the tool it would not.
A suggestion is only shown, never applied: a person copies it into POLICY_FILE.

A run of approvals by one person, each within `seconds` of the one before, is a rapid run: faster
than anyone reads a request.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Any

from core.models import PolicyRules
from core.policy import evaluate
from core.tool_specs import TOOL_SPECS

APPROVED = ("allow", "always_allow")
OVERRULED = ("deny", "edit")  # a person read it and did not simply approve
EXAMPLES = 3


@dataclass(frozen=True)
class FatigueLimits:
    min_count: int = 20
    max_median_seconds: float = 5.0


@dataclass
class Suggestion:
    tool: str
    rule: str
    covers: int  # past approved calls the rule allows
    median_seconds: float
    not_covered: int = 0  # approved calls of this tool the rule would still ask about
    not_covered_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "rule": self.rule,
            "covers": self.covers,
            "median_seconds": round(self.median_seconds, 3),
            "not_covered": self.not_covered,
            "not_covered_examples": self.not_covered_examples,
        }


def main_argument(tool: str, arguments: dict[str, Any]) -> str | None:
    """What a rule of this tool globs over; None for tools whose definition the audit does not hold."""
    spec = TOOL_SPECS.get(tool)
    if spec is None or spec.rule_argument is None:
        return None
    value = arguments.get(spec.rule_argument)
    return value if isinstance(value, str) else None


def _is_shell(tool: str) -> bool:
    spec = TOOL_SPECS.get(tool)
    return spec is not None and spec.splitter == "shell"


def _group_key(tool: str, argument: str | None) -> str:
    if argument is None:
        return ""
    if _is_shell(tool):
        return " ".join(argument.split()[:2])
    parts = argument.strip("/").split("/")
    return parts[0] if len(parts) > 1 else ""


def narrowest_pattern(tool: str, arguments: list[str]) -> str:
    """The narrowest glob of our rule syntax that matches every one: the very value when they are
    all the same, else the common command words followed by `*`, or the common directory `/**`."""
    if len(set(arguments)) == 1:
        return arguments[0]
    if _is_shell(tool):
        words = [argument.split() for argument in arguments]
        common: list[str] = []
        for column in zip(*words, strict=False):
            if len(set(column)) != 1:
                break
            common.append(column[0])
        return f"{' '.join(common)}*" if common else "*"
    directories = [argument.strip("/").split("/")[:-1] for argument in arguments]
    shared: list[str] = []
    for column in zip(*directories, strict=False):
        if len(set(column)) != 1:
            break
        shared.append(column[0])
    return f"{'/'.join(shared)}/**" if shared else "*"


def _allows(rule: str, tool: str, argument: str | None) -> bool:
    only = PolicyRules(mode="default", allow=[rule], ask=[], deny=[])
    return evaluate(only, tool, argument if argument is not None else "") == "allow"


def decision_seconds(row: dict[str, Any]) -> float | None:
    if not row.get("created_at") or not row.get("resolved_at"):
        return None
    took = datetime.fromisoformat(str(row["resolved_at"])) - datetime.fromisoformat(str(row["created_at"]))
    return max(took.total_seconds(), 0.0)


def suggest_rules(rows: Iterable[dict[str, Any]], limits: FatigueLimits | None = None) -> list[Suggestion]:
    """Candidates from audit rows (storage/audit.py's shape), most covering first."""
    limits = limits or FatigueLimits()
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("kind", "request") == "request" and row.get("decision") in (*APPROVED, *OVERRULED):
            by_tool.setdefault(row["tool_name"], []).append(row)
    found: list[Suggestion] = []
    for tool, decided in sorted(by_tool.items()):
        found.extend(_for_tool(tool, decided, limits))
    return sorted(found, key=lambda suggestion: (-suggestion.covers, suggestion.rule))


def _for_tool(tool: str, decided: list[dict[str, Any]], limits: FatigueLimits) -> list[Suggestion]:
    approved = [(row, main_argument(tool, row["arguments"])) for row in decided if row["decision"] in APPROVED]
    overruled = [main_argument(tool, row["arguments"]) for row in decided if row["decision"] in OVERRULED]
    groups: dict[str, list[tuple[dict[str, Any], str | None]]] = {}
    for row, argument in approved:
        groups.setdefault(_group_key(tool, argument), []).append((row, argument))
    suggestions = []
    for members in groups.values():
        if len(members) < limits.min_count:
            continue
        arguments = [argument for _, argument in members]
        if any(argument is None for argument in arguments):
            rule = tool  # no argument to glob over: the tool itself, only if never overruled
        else:
            rule = f"{tool}({narrowest_pattern(tool, [a for a in arguments if a is not None])})"
        if any(_allows(rule, tool, argument) for argument in overruled):
            continue  # a call this rule would allow was denied or edited: not approved every time
        covered = [row for row, argument in approved if _allows(rule, tool, argument)]
        seconds = [took for row in covered if (took := decision_seconds(row)) is not None]
        if len(covered) < limits.min_count or not seconds:
            continue
        median = statistics.median(seconds)
        if median >= limits.max_median_seconds:
            continue
        left = [argument or "" for _, argument in approved if not _allows(rule, tool, argument)]
        suggestions.append(Suggestion(tool, rule, len(covered), median, len(left), left[:EXAMPLES]))
    return suggestions


def rapid_run(decided_at: list[datetime], count: int, seconds: float) -> bool:
    """Whether the newest `count` approvals (times, oldest first) each came within `seconds` of
    the one before: too fast to have read them."""
    if count < 2 or len(decided_at) < count:
        return False
    newest = decided_at[-count:]
    return all((later - earlier).total_seconds() <= seconds for earlier, later in pairwise(newest))
