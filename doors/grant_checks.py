"""What a door checks before it makes a grant, and which waiting calls a grant covers. Pure.

A grant lets one person's word stand for calls nobody has read yet, so it may cover no call that
person could not approve one by one: wherever an approver rule could apply to the pattern's tool
(its tool glob and the rule's overlap), the maker must be one of that rule's approvers, and a rule
that needs several approvers refuses every grant (one person's grant never stands for M of N).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from core.approvers import may_decide
from core.grant_patterns import grant_rules, widen
from core.grants import checked_pattern, pattern_covers
from core.policy import InvalidRule, Rule, shell_segments
from core.policy_rules import PolicyRules
from core.tool_model import ToolDef
from core.tool_registry import main_argument_text
from core.tool_specs import TOOL_SPECS


class BadGrant(ValueError):
    """A pattern the policy's syntax refuses, or a scope without what it needs: bad usage (2, 400)."""


class GrantRefused(Exception):
    """The approver rules do not let this person make this grant (exit 3, HTTP 403)."""


def valid_pattern(pattern: str) -> str:
    """The pattern, stripped; BadGrant with the policy's one-line message when it is not a rule."""
    try:
        found = checked_pattern(pattern)
    except (InvalidRule, ValueError) as err:
        raise BadGrant(f"not a grant pattern: {' '.join(str(err).split())}") from None
    if not found:
        raise BadGrant("not a grant pattern: it is empty")
    return found


def refusal(rules: PolicyRules, pattern: str, maker: str, groups: list[str]) -> str | None:
    """Why the approver rules refuse this maker a grant of this pattern; None when they admit them."""
    tool = Rule.parse(pattern).tool
    for rule in rules.approvers:
        for text in rule.match:
            if not globs_overlap(tool, Rule.parse(text).tool):
                continue
            if rule.required > 1:
                return f"calls like {text} need {rule.required} approvers: no grant may cover them"
            if not may_decide(rule.approvers, maker, groups):
                return f"{maker} may not grant {pattern}: calls like {text} are decided by {', '.join(rule.approvers)}"
    return None


def row_covered(pattern: str, row: dict[str, Any]) -> bool:
    """Whether the pattern covers a read-model request's call: a built-in is judged by its own spec
    (its rule argument, its shell splitting), any other tool by its name and its arguments as JSON."""
    spec = _builtin_spec(row)
    arguments = row.get("arguments") or {}
    tool = spec or _untyped(row["tool_name"])
    return pattern_covers(pattern, tool, main_argument_text(tool, arguments))


def row_matched(pattern: str, row: dict[str, Any]) -> bool:
    """Whether a grant made with the approval of this call is about this call: the pattern covers
    it, or one command of it when it is a compound shell command (the card offers each part's rule)."""
    if row_covered(pattern, row):
        return True
    spec = _builtin_spec(row)
    if spec is None or spec.splitter != "shell":
        return False
    argument = main_argument_text(spec, row.get("arguments") or {})
    return any(pattern_covers(pattern, spec, segment) for segment in shell_segments(argument))


def offer(row: dict[str, Any]) -> dict[str, list[str]] | None:
    """What the card offers with an approval: the narrowest rules covering the call (the first is
    prefilled; the others are the other commands of a compound one) and each step wider from the
    first, for a person who widens it knowingly; None when no grant may be offered."""
    if row.get("supplied_by_approver"):  # each call waits for a person's values: nothing to offer
        return None
    spec = _builtin_spec(row)
    rules = list(grant_rules(spec or _untyped(row["tool_name"]), row.get("arguments") or {}))
    try:
        rules = [valid_pattern(rule) for rule in rules]
    except BadGrant:  # a tool whose name no rule can name (another workflow's request, say)
        return None
    if not rules:
        return None
    wider: list[str] = []
    step = widen(rules[0])
    while step is not None and step not in wider and len(wider) < 8:
        wider.append(step)
        step = widen(step)
    return {"rules": rules, "wider": wider}


def _builtin_spec(row: dict[str, Any]) -> ToolDef | None:
    builtin = (row.get("tool") or {}).get("source", "builtin") == "builtin"
    return TOOL_SPECS.get(row["tool_name"]) if builtin else None


def _untyped(name: str) -> ToolDef:
    """A tool the doors know only by name: rules glob over all its arguments as canonical JSON."""
    return ToolDef(name=name, description="", parameters={}, permission_type="write")


def globs_overlap(first: str, second: str) -> bool:
    """Whether some name matches both globs (`*`, `?`, `[...]`); a bracket set is taken as any one
    character, so the answer errs towards yes (and a grant towards refused)."""
    return _overlap(tuple(_tokens(first)), tuple(_tokens(second)))


def _tokens(glob: str) -> list[str]:
    tokens, index = [], 0
    while index < len(glob):
        char = glob[index]
        end = glob.find("]", index + 2) if char == "[" else -1
        if end != -1:
            tokens.append(glob[index : end + 1])
            index = end + 1
            continue
        tokens.append(char)
        index += 1
    return tokens


def _one_char_meets(first: str, second: str) -> bool:
    if first == "?" or second == "?" or (first.startswith("[") and second.startswith("[")):
        return True
    if first.startswith("["):
        return fnmatchcase(second, first)
    if second.startswith("["):
        return fnmatchcase(first, second)
    return first == second


@cache
def _overlap(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    if not first or not second:
        rest = first or second
        return all(token == "*" for token in rest)
    if first[0] == "*":  # it matches nothing more, or it takes the other's next character (or star)
        return _overlap(first[1:], second) or _overlap(first, second[1:])
    if second[0] == "*":
        return _overlap(first, second[1:]) or _overlap(first[1:], second)
    return _one_char_meets(first[0], second[0]) and _overlap(first[1:], second[1:])
