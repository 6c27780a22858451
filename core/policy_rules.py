"""Policy configuration as the workflows hold it: rules, approver rules, channel routes, notify plans."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from core.wire_model import WireModel

RuleVerdict = Literal["allow", "ask", "deny"]


class ApproverRule(WireModel):
    """Who may decide the calls a rule matches: names and `group:NAME` entries."""

    match: list[str] = Field(description="rules in the allow/ask/deny syntax: tool or tool(glob)")
    approvers: list[str]
    required: int = Field(default=1, ge=1, le=10, description="distinct approvers an allow needs")
    self_approval: bool = Field(default=True, description="false: whoever started the conversation may not decide")
    notify: list[str] = Field(default_factory=list, description="channels told when a matching request opens")
    remind_after: float | None = Field(default=None, gt=0, description="seconds until the first reminder")
    reminders: int = Field(default=1, ge=0, le=50, description="at most this many reminders, remind_after apart")
    escalate_after: float | None = Field(default=None, gt=0, description="seconds until the escalation")
    escalate_to: list[str] = Field(default_factory=list, description="channels and group:NAME entries escalated to")
    warn_before_expiry: float | None = Field(default=None, gt=0, description="seconds before expiry to warn")


class ChannelRoute(WireModel):
    """What the workflow knows of a channel: its kind and the groups it serves (never its URL or secret)."""

    # A plain name, so recorded histories read whatever kinds there were; the worker checks it
    # against the registry when it reads the channels (config/notify_section.py).
    kind: str = "webhook"
    groups: list[str] = Field(default_factory=list, description="requests these groups may decide; '*': every one")


class NotifyPlan(WireModel):
    """Who hears about one request and when, fixed when it opens (from the matching approver rules)."""

    channels: list[str] = Field(default_factory=list)
    remind_after: float | None = None
    reminders: int = 0
    escalate_after: float | None = None
    escalate_channels: list[str] = Field(default_factory=list)
    escalate_groups: list[str] = Field(default_factory=list)
    warn_before_expiry: float | None = None

    def is_empty(self) -> bool:
        timers = (self.remind_after, self.escalate_after, self.warn_before_expiry)
        return not self.channels and not self.escalate_channels and all(t is None for t in timers)


class PolicyRules(WireModel):
    mode: Literal["default", "auto_approve"] = "default"
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    network: list[str] = Field(
        default_factory=list, description="rules whose calls run with the host's network; others run without"
    )
    approvers: list[ApproverRule] = Field(default_factory=list)
    within: list[PolicyRules] = Field(
        default_factory=list, description="outer rule sets (a subagent's parents): a call gets the strictest verdict"
    )
    channels: dict[str, ChannelRoute] = Field(default_factory=dict, description="notification channels by name")
    cedar_policies: str | None = Field(
        default=None, description="[cedar] policies' text: forbid denies, permit allows (core/cedar_rules.py)"
    )


class DelegationLimits(WireModel):
    """How far a conversation may delegate, and the rules a subagent adds to its parent's."""

    max_depth: int = Field(default=2, ge=0, description="subagents below a top conversation; 0: no delegate tool")
    max_children: int = Field(default=4, ge=0, description="subagents one conversation may start in all")
    rules: PolicyRules | None = Field(default=None, description="a subagent's own rules; None: the parent's alone")


class ServiceRules(WireModel):
    """The deployment's rules and default deadline, read by the worker for an ApprovalRequest
    (whose caller knows neither): recorded once in the request's history."""

    policy: PolicyRules
    approval_timeout_seconds: float
    earlier: dict[str, Any] | None = Field(
        default=None, description="the result an earlier run of the same request id was decided with"
    )
