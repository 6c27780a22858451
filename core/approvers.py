"""Who may decide a call: the approver rules of the policy, matched like allow/ask/deny rules.

Pure workflow code. A request records its approvers when it is opened, so the doors (reading the
projection) and the workflow (reading its own record) judge a decision by the same list.
"""

from __future__ import annotations

from typing import Any

from core.policy import Rule, evaluate, shell_segments
from core.policy_rules import ApproverRule, PolicyRules
from core.tool_model import ToolDef
from core.tool_registry import main_argument_text


def _matching(rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any]) -> list[ApproverRule]:
    """The approver rules that cover a call. Like a deny, a rule matches a compound shell command
    when it matches any of its parts."""
    argument = main_argument_text(tool, arguments)
    candidates = [argument, *shell_segments(argument)] if tool.splitter == "shell" else [argument]
    return [
        rule
        for rule in rules.approvers
        if any(Rule.parse(text).matches(tool.name, value) for text in rule.match for value in candidates)
    ]


def approvers_for(rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any]) -> list[str] | None:
    """Everyone any matching rule names (in rule order, once each); None when no rule matches."""
    matching = _matching(rules, tool, arguments)
    if not matching:
        return None
    named: list[str] = []
    for rule in matching:
        named.extend(name for name in rule.approvers if name not in named)
    return named


def required_for(rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any]) -> int:
    """Distinct approvals the call needs: the most any matching rule asks for (1 when none)."""
    return max([rule.required for rule in _matching(rules, tool, arguments)], default=1)


def not_by_for(rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any], started_by: str | None) -> str | None:
    """Who may not decide the call: the conversation's starter, when a matching rule forbids
    approving one's own calls; None otherwise."""
    if started_by is None:
        return None
    forbids = any(not rule.self_approval for rule in _matching(rules, tool, arguments))
    return started_by if forbids else None


def keeps_asking(rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any], main_argument: str) -> bool:
    """Whether an allowed call is one auto-approve or always-allow lifted from an ask while an
    approver rule names who must decide it: then it is asked all the same, so neither switch is a
    way around the approvers (deny rules already beat both)."""
    if approvers_for(rules, tool, arguments) is None:
        return False
    return evaluate(rules.model_copy(update={"mode": "default"}), tool, main_argument) == "ask"


def may_decide(
    approvers: list[str] | None, principal: str | None, groups: list[str], not_by: str | None = None
) -> bool:
    """A name on the list, or a member of a `group:NAME` on it; anyone when no rule applies. Never
    the conversation's starter where a rule forbids self-approval."""
    if not_by is not None and principal == not_by:
        return False
    if approvers is None:
        return True
    if principal is None:
        return False
    return principal in approvers or any(f"group:{group}" in approvers for group in groups)


def approver_refusal(
    request_id: str, approvers: list[str] | None, principal: str | None, groups: list[str], not_by: str | None = None
) -> str:
    if not_by is not None and principal == not_by:
        return f"{principal} started this conversation and may not approve its own call {request_id}"
    who = "a decision with no verified principal" if principal is None else f"{principal} (groups {groups or 'none'})"
    return f"{who} may not decide {request_id}: only {', '.join(approvers or [])}"


def matching_rules(rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any]) -> list[ApproverRule]:
    """The approver rules that cover a call, in file order (their notification settings apply too)."""
    return _matching(rules, tool, arguments)
