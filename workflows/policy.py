"""Permission rules: deny beats ask beats allow; a call that no rule matches is asked.

Pure workflow code. The rules arrive in the workflow input (read once from POLICY_FILE when the
conversation starts), so a replay decides every call exactly as the first run did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from workflows.models import PolicyRules, RuleVerdict, ToolDef
from workflows.tool_specs import TOOL_SPECS

# A tool name or a glob over names (`mcp__git__*`), optionally with a glob over its rule argument.
_RULE = re.compile(r"^\s*([A-Za-z_*?\[][A-Za-z0-9_.*?\[\]-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_SHELL_SEPARATORS = re.compile(r"\|\||&&|\$\(|[;|&\n()`]")
# Words that may lead a command inside a compound one (`{ sudo x; }`, `if sudo x`, `X=1 sudo x`).
_LEADING_WORDS = re.compile(
    r"^(?:(?:[{}!]|if|then|else|elif|fi|do|done|while|until|time|[A-Za-z_][A-Za-z0-9_]*=\S*)(?:\s+|$))+"
)

DEFAULT_RULES = PolicyRules(
    mode="default",
    allow=["list_dir", "read_file", "kv_get", "kv_set"],
    ask=["write_file", "run_shell"],
    deny=["run_shell(rm -rf /*)", "run_shell(sudo *)", "write_file(.git/**)"],
)


class InvalidRule(ValueError):
    """A rule that cannot be parsed; raised when the policy is loaded, never mid-conversation."""


@dataclass(frozen=True)
class Rule:
    tool: str
    pattern: str | None

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.match(text)
        if match is None:
            raise InvalidRule(f"rule {text!r} is not of the form tool or tool(glob)")
        return cls(match.group(1), match.group(2))

    def matches(self, tool: str, main_argument: str) -> bool:
        if not fnmatchcase(tool, self.tool):
            return False
        if self.pattern is None:
            return True
        return fnmatchcase(main_argument, self.pattern)


def shell_segments(command: str) -> list[str]:
    """Split a command line into its simple commands so `ls; sudo x`, `(sudo x)` or `if sudo x; ...`
    cannot hide `sudo x` from a deny. A guard against slips, not a sandbox: `bash -c` or `eval` hide."""
    parts = [_LEADING_WORDS.sub("", part.strip()).strip() for part in _SHELL_SEPARATORS.split(command)]
    return [part for part in parts if part] or [command.strip()]


def validate_rules(rules: PolicyRules) -> PolicyRules:
    for text in (*rules.allow, *rules.ask, *rules.deny, *(text for r in rules.approvers for text in r.match)):
        Rule.parse(text)
    return rules


def _any_match(rules: list[str], tool: str, candidates: list[str]) -> bool:
    parsed = [Rule.parse(text) for text in rules]
    return any(rule.matches(tool, value) for rule in parsed for value in candidates)


def _all_match(rules: list[str], tool: str, candidates: list[str]) -> bool:
    parsed = [Rule.parse(text) for text in rules]
    return all(any(rule.matches(tool, value) for rule in parsed) for value in candidates)


def _splitter(tool: str | ToolDef) -> Callable[[str], list[str]] | None:
    """How the tool's rule argument splits into parts, as its definition says (a bare name is looked
    up among the built-ins)."""
    if isinstance(tool, str):
        definition = TOOL_SPECS.get(tool)
        mode = definition.splitter if definition is not None else "none"
    else:
        mode = tool.splitter
    return shell_segments if mode == "shell" else None


def evaluate(
    rules: PolicyRules,
    tool: str | ToolDef,
    main_argument: str,
    *,
    always_allow: frozenset[str] = frozenset(),
    auto_approve: bool = False,
) -> RuleVerdict:
    """Decide one validated call. Always-allow and auto-approve lift asks, never denies."""
    split = _splitter(tool)
    if not isinstance(tool, str):
        tool = tool.name
    candidates = [main_argument]
    if split is not None:
        candidates = [main_argument, *split(main_argument)]
    if _any_match(rules.deny, tool, candidates):
        return "deny"
    if tool in always_allow or auto_approve or rules.mode == "auto_approve":
        return "allow"
    # An allow must cover every part of a compound shell command; a matching ask keeps it asked.
    allow_candidates = candidates[1:] if split is not None else candidates
    if _any_match(rules.ask, tool, candidates):
        return "ask"
    if _all_match(rules.allow, tool, allow_candidates):
        return "allow"
    return "ask"
