"""Who hears about a request and when: the notification part of the approver rules, and channel routing.

Pure workflow code, run once when a request opens; the plan is stored on the request, so a replay,
a reminder and an escalation all read the same one. A channel is reached because a matching rule
names it (`notify`, `escalate_to`) or because it serves a group that may decide the request.
"""

from __future__ import annotations

from typing import Any

from core.approvers import matching_rules
from core.policy_rules import NotifyPlan, PolicyRules
from core.tool_model import ToolDef

GROUP_PREFIX = "group:"


def channels_for_groups(rules: PolicyRules, groups: list[str], every: bool = True) -> list[str]:
    """Channels serving any of the groups; with `every`, also those serving every request ('*')."""
    return [
        name
        for name, route in sorted(rules.channels.items())
        if (every and "*" in route.groups) or set(groups).intersection(route.groups)
    ]


def plan_for(
    rules: PolicyRules, tool: ToolDef, arguments: dict[str, Any], approvers: list[str] | None
) -> NotifyPlan | None:
    """The request's plan; None when no channel and no timer applies (its workflow then adds nothing).
    Channels add up over the matching rules; each timer comes from the first rule that sets it."""
    if not rules.channels and not rules.approvers:
        return None
    matching = matching_rules(rules, tool, arguments)
    plan = NotifyPlan()
    _extend(plan.channels, [name for rule in matching for name in rule.notify])
    approver_groups = [entry[len(GROUP_PREFIX) :] for entry in approvers or [] if _is_group(entry)]
    _extend(plan.channels, channels_for_groups(rules, approver_groups))
    reminding = next((rule for rule in matching if rule.remind_after is not None), None)
    if reminding is not None:
        plan.remind_after, plan.reminders = reminding.remind_after, reminding.reminders
    escalating = next((rule for rule in matching if rule.escalate_after is not None), None)
    if escalating is not None:
        plan.escalate_after = escalating.escalate_after
        targets = escalating.escalate_to
        plan.escalate_groups = [t[len(GROUP_PREFIX) :] for t in targets if _is_group(t)]
        _extend(plan.escalate_channels, [t for t in targets if not _is_group(t)])
        _extend(plan.escalate_channels, channels_for_groups(rules, plan.escalate_groups, every=False))
    plan.warn_before_expiry = next((r.warn_before_expiry for r in matching if r.warn_before_expiry is not None), None)
    return None if plan.is_empty() else plan


def _is_group(entry: str) -> bool:
    return entry.startswith(GROUP_PREFIX)


def _extend(names: list[str], more: list[str]) -> None:
    names.extend(name for name in more if name not in names)
