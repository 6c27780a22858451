"""Approval fatigue: calls people approve every time, quickly, and the rule that would spare them.

From the audit, the approved calls of each tool are grouped by where they act (the first
directory of a path, the first two words of a simple command); a group approved at least
`min_count` times, with a median decision under `max_median_seconds`, becomes a candidate: the
narrowest allow rule covering those calls (their common directory, `notes/**`, or command prefix,
`git status*`), how many past calls it covers (judged by the policy's own matcher) and which
approved calls of the tool it would not.
A suggestion is only shown, never applied: a person copies it into POLICY_FILE.

A group is never wider than a grant would be (core/grant_patterns.py): a command that sends,
fetches, destroys or reconfigures is suggested only exactly, a compound command or a file other
programs run never. Every candidate is replayed (core/policy_replay.py) with the policy's deny
rules over the refused calls: one that would let through a call a person denied or edited, or
that expired, is withdrawn, and the withdrawal says which. A candidate an ask rule of the policy
shadows is kept but says which rule blocks it: an ask outranks every allow.

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

from core.grant_patterns import command_pattern, literal, path_pattern
from core.policy import DEFAULT_RULES, evaluate, shell_segments
from core.policy_replay import REFUSED, replay
from core.policy_rules import PolicyRules
from core.rule_shadows import shadowing_ask
from core.tool_specs import TOOL_SPECS

APPROVED = ("allow", "always_allow")
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
    blocked_by: str | None = None  # an ask rule of the policy that matches every call it allows

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "rule": self.rule,
            "covers": self.covers,
            "median_seconds": round(self.median_seconds, 3),
            "not_covered": self.not_covered,
            "not_covered_examples": self.not_covered_examples,
            "blocked_by": self.blocked_by,
        }


@dataclass(frozen=True)
class Withdrawn:
    """A candidate the replay refused: it would let a refused call run without a person."""

    rule: str
    refused: list[dict[str, Any]]  # the replay's flagged calls

    def text(self) -> str:
        first = self.refused[0]
        more = f" and {len(self.refused) - 1} more" if len(self.refused) > 1 else ""
        return f"not suggested: {self.rule} would let {first['request_id']} run without a person ({first['why']}){more}"


@dataclass
class Review:
    suggestions: list[Suggestion]
    withdrawn: list[Withdrawn]


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


def _group_key(tool: str, argument: str | None) -> str | None:
    """Where a call acts: the grant pattern of a simple command, the first directory of a path (a
    top-level file alone); None when no rule may be suggested for it."""
    if argument is None:
        return ""
    if _is_shell(tool):
        segments = shell_segments(argument)
        return command_pattern(segments[0]) if len(segments) == 1 else None  # one rule covers one part
    spec = TOOL_SPECS.get(tool)
    if spec is not None and spec.path_arguments and path_pattern(argument) is None:
        return None
    parts = argument.strip("/").split("/")
    return parts[0] if len(parts) > 1 else f"={argument}"


def _acting_on(tool: str, argument: str | None) -> str | None:
    """A shell command normalised as rules see it (quotes, blanks and wrappers gone)."""
    if argument is None or not _is_shell(tool):
        return argument
    return shell_segments(argument)[0]


def narrowest_pattern(tool: str, arguments: list[str]) -> str:
    """The narrowest glob of our rule syntax that matches every one: the very value when they are
    all the same, else the common command words followed by `*`, or the common directory `/**`
    (literal text, glob characters bracketed)."""
    if len(set(arguments)) == 1:
        return literal(arguments[0])
    if _is_shell(tool):
        words = [argument.split() for argument in arguments]
        common: list[str] = []
        for column in zip(*words, strict=False):
            if len(set(column)) != 1:
                break
            common.append(column[0])
        return f"{literal(' '.join(common))}*" if common else "*"
    directories = [argument.strip("/").split("/")[:-1] for argument in arguments]
    shared: list[str] = []
    for column in zip(*directories, strict=False):
        if len(set(column)) != 1:
            break
        shared.append(column[0])
    return f"{literal('/'.join(shared))}/**" if shared else "*"


def _allows(rule: str, tool: str, argument: str | None) -> bool:
    only = PolicyRules(mode="default", allow=[rule], ask=[], deny=[])
    return evaluate(only, tool, argument if argument is not None else "") == "allow"


def decision_seconds(row: dict[str, Any]) -> float | None:
    if not row.get("created_at") or not row.get("resolved_at"):
        return None
    took = datetime.fromisoformat(str(row["resolved_at"])) - datetime.fromisoformat(str(row["created_at"]))
    return max(took.total_seconds(), 0.0)


def suggest_rules(
    rows: Iterable[dict[str, Any]], limits: FatigueLimits | None = None, policy: PolicyRules = DEFAULT_RULES
) -> list[Suggestion]:
    """Candidates from audit rows (storage/audit.py's shape), most covering first."""
    return review_suggestions(rows, limits, policy).suggestions


def review_suggestions(
    rows: Iterable[dict[str, Any]], limits: FatigueLimits | None = None, policy: PolicyRules = DEFAULT_RULES
) -> Review:
    """The suggestions, and the candidates withdrawn because they would let a refused call run."""
    limits = limits or FatigueLimits()
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("kind", "request") == "request" and row.get("decision") in (*APPROVED, *REFUSED):
            by_tool.setdefault(row["tool_name"], []).append(row)
    review = Review([], [])
    for tool, decided in sorted(by_tool.items()):
        _for_tool(tool, decided, limits, policy, review)
    review.suggestions.sort(key=lambda suggestion: (-suggestion.covers, suggestion.rule))
    return review


def _for_tool(
    tool: str, decided: list[dict[str, Any]], limits: FatigueLimits, policy: PolicyRules, review: Review
) -> None:
    approved = [(row, main_argument(tool, row["arguments"])) for row in decided if row["decision"] in APPROVED]
    refused = [row for row in decided if row["decision"] in REFUSED]
    groups: dict[str, list[tuple[dict[str, Any], str | None]]] = {}
    for row, argument in approved:
        key = _group_key(tool, argument)
        if key is not None:
            groups.setdefault(key, []).append((row, _acting_on(tool, argument)))
    for members in groups.values():
        if len(members) < limits.min_count:
            continue
        arguments = [argument for _, argument in members]
        if any(argument is None for argument in arguments):
            rule = tool  # no argument to glob over: the tool itself, only if never refused
        else:
            rule = f"{tool}({narrowest_pattern(tool, [a for a in arguments if a is not None])})"
        covered = [row for row, argument in approved if _allows(rule, tool, argument)]
        seconds = [took for row in covered if (took := decision_seconds(row)) is not None]
        if len(covered) < limits.min_count or not seconds:
            continue
        median = statistics.median(seconds)
        if median >= limits.max_median_seconds:
            continue
        # Replayed with the policy's denies: would it let a call run that a person refused?
        flagged = replay(refused, PolicyRules(allow=[rule], deny=policy.deny)).refused_but_allowed()
        if flagged:
            review.withdrawn.append(Withdrawn(rule, [item.as_dict(flagged=True) for item in flagged]))
            continue
        left = [argument or "" for _, argument in approved if not _allows(rule, tool, argument)]
        blocked_by = shadowing_ask(policy.ask, rule)
        review.suggestions.append(
            Suggestion(tool, rule, len(covered), median, len(left), left[:EXAMPLES], blocked_by=blocked_by)
        )


def rapid_run(decided_at: list[datetime], count: int, seconds: float) -> bool:
    """Whether the newest `count` approvals (times, oldest first) each came within `seconds` of
    the one before: too fast to have read them."""
    if count < 2 or len(decided_at) < count:
        return False
    newest = decided_at[-count:]
    return all((later - earlier).total_seconds() <= seconds for earlier, later in pairwise(newest))
