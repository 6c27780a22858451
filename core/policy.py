"""Permission rules: deny beats ask beats allow; a call that no rule matches is asked.

Pure workflow code. The rules arrive in the workflow input (read once from POLICY_FILE when the
conversation starts), so a replay decides every call exactly as the first run did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from core.policy_rules import PolicyRules, RuleVerdict
from core.shell_words import collapse_whitespace, simple_commands
from core.tool_model import ToolDef
from core.tool_specs import TOOL_SPECS

# A tool name or a glob over names (`mcp__git__*`), optionally with a glob over its rule argument.
_RULE = re.compile(r"^\s*([A-Za-z_*?\[][A-Za-z0-9_.*?\[\]-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)
# Shell matching before normalisation. A history recorded then replays with it (its verdicts are in
# that history's commands); the workflow asks `workflow.patched` with SHELL_RULE_NORMALISATION (workflows/patches.py).
_LEGACY_SEPARATORS = re.compile(r"\|\||&&|\$\(|[;|&\n()`]")
_LEGACY_LEADING = re.compile(
    r"^(?:(?:[{}!]|if|then|else|elif|fi|do|done|while|until|time|[A-Za-z_][A-Za-z0-9_]*=\S*)(?:\s+|$))+"
)

# No whole tool under `ask`: a call no rule matches is asked anyway, and an ask rule outranks every
# allow, so `ask = ["run_shell"]` would only stop a later `allow = ["run_shell(git status*)"]` from
# taking effect. `ask` is for a narrower pattern a broader allow must not let through.
DEFAULT_RULES = PolicyRules(
    mode="default",
    allow=["list_dir", "read_file", "file_info", "kv_get", "kv_set", "delegate"],
    ask=[],
    deny=["run_shell(rm -rf /*)", "run_shell(sudo *)", "write_file(.git/**)", "write_file(**/.git/**)"],
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
    """The simple commands of a command line, normalised (see core.shell_words), so neither
    `ls; sudo x`, `time -p sudo x` nor `sudo<TAB>x` hides `sudo x` from a deny."""
    return simple_commands(command) or [collapse_whitespace(command)]


def _legacy_segments(command: str) -> list[str]:
    parts = [_LEGACY_LEADING.sub("", part.strip()).strip() for part in _LEGACY_SEPARATORS.split(command)]
    return [part for part in parts if part] or [command.strip()]


def validate_rules(rules: PolicyRules) -> PolicyRules:
    approver_rules = (text for rule in rules.approvers for text in rule.match)
    for text in (*rules.allow, *rules.ask, *rules.deny, *rules.network, *approver_rules):
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


def _candidates(tool: str | ToolDef, main_argument: str, normalise: bool = True) -> tuple[list[str], list[str]]:
    """What deny rules are matched against (any may match), and what allow-like rules must cover
    (all must match): for a shell command, every simple command of it."""
    if _splitter(tool) is None:
        return [main_argument], [main_argument]
    if not normalise:
        legacy = _legacy_segments(main_argument)
        return [main_argument, *legacy], legacy
    segments = shell_segments(main_argument)
    return [main_argument, collapse_whitespace(main_argument), *segments], segments


def evaluate(
    rules: PolicyRules,
    tool: str | ToolDef,
    main_argument: str,
    *,
    always_allow: frozenset[str] = frozenset(),
    auto_approve: bool = False,
    normalise_shell: bool = True,
) -> RuleVerdict:
    """Decide one validated call. Always-allow and auto-approve lift asks, never denies.
    normalise_shell=False matches shell commands as releases before normalisation did.
    Rules with outer sets (`within`, a subagent's parents) give the strictest verdict of them all."""
    verdict = _evaluate_one(rules, tool, main_argument, always_allow, auto_approve, normalise_shell)
    for outer in rules.within:
        found = _evaluate_one(outer, tool, main_argument, always_allow, auto_approve, normalise_shell)
        verdict = max(verdict, found, key=STRICTNESS.index)
    return verdict


# Verdicts from the most permissive to the strictest.
STRICTNESS: tuple[RuleVerdict, ...] = ("allow", "ask", "deny")


def _evaluate_one(
    rules: PolicyRules,
    tool: str | ToolDef,
    main_argument: str,
    always_allow: frozenset[str],
    auto_approve: bool,
    normalise_shell: bool,
) -> RuleVerdict:
    candidates, allow_candidates = _candidates(tool, main_argument, normalise_shell)
    if not isinstance(tool, str):
        tool = tool.name
    if _any_match(rules.deny, tool, candidates):
        return "deny"
    if tool in always_allow or auto_approve or rules.mode == "auto_approve":
        return "allow"
    # An allow must cover every part of a compound shell command; a matching ask keeps it asked.
    if _any_match(rules.ask, tool, candidates):
        return "ask"
    if _all_match(rules.allow, tool, allow_candidates):
        return "allow"
    return "ask"


def network_allowed(rules: PolicyRules, tool: str | ToolDef, main_argument: str) -> bool:
    """Whether the call's sandbox shares the host's network: a network rule must cover every
    simple command of it (`curl x; sh y` gets no network from `run_shell(curl *)` alone)."""
    _, covered = _candidates(tool, main_argument)
    name = tool if isinstance(tool, str) else tool.name
    return all(bool(layer.network) and _all_match(layer.network, name, covered) for layer in [rules, *rules.within])


def asking_rule(rules: PolicyRules, tool: str | ToolDef, main_argument: str) -> str | None:
    """The ask rule that made a call asked, for its preview; None: no rule asked, but no allow
    rule covered every part of it either (a call no rule matches is asked)."""
    candidates, _ = _candidates(tool, main_argument)
    name = tool if isinstance(tool, str) else tool.name
    for layer in [rules, *rules.within]:
        for text in layer.ask:
            if any(Rule.parse(text).matches(name, value) for value in candidates):
                return text
    return None


def deciding_rules(rules: PolicyRules, tool: str | ToolDef, main_argument: str) -> list[str]:
    """The rules of one rule set (its outer sets aside) behind a call's verdict, for reports: the
    first deny rule that matches; else the first ask rule (none in auto-approve mode); else, when
    allow rules cover every part of the call, one allow rule per part; [] when no rule decided."""
    candidates, allow_candidates = _candidates(tool, main_argument)
    name = tool if isinstance(tool, str) else tool.name
    lists = (rules.deny,) if rules.mode == "auto_approve" else (rules.deny, rules.ask)
    for texts in lists:
        for text in texts:
            if any(Rule.parse(text).matches(name, value) for value in candidates):
                return [text]
    covering: list[str] = []
    for value in allow_candidates:
        found = next((text for text in rules.allow if Rule.parse(text).matches(name, value)), None)
        if found is None:
            return []
        covering.append(found)
    return list(dict.fromkeys(covering))
