"""How the rules judge one call of a model's message, before anything runs or anyone is asked.

The call is validated against the turn's tools, then judged: the TOML rules (deny beats ask beats
allow; always-allow and auto-approve on top), the Cedar policies beside them (core/cedar_rules.py:
a forbid denies, a permit allows what no rule matched), approver rules that outrank auto-approve;
and, when `[shadow]` rules exist, the same judgement under them, kept only to be compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.approvers import keeps_asking
    from core.cedar_rules import cedar_verdict
    from core.chat_model import ToolCall
    from core.conversation_model import ApprovalRecord
    from core.policy import asking_rule, evaluate
    from core.policy_rules import PolicyRules, RuleVerdict
    from core.tool_arguments import validate_call
    from core.tool_model import ToolDef
    from core.tool_registry import Catalog, InvalidToolCall, main_argument_text


@dataclass
class CallPlan:
    """One call of the message: what the checks and the rules made of it."""

    call: ToolCall
    spec: ToolDef | None
    arguments: dict[str, Any]
    verdict: str
    error: str | None = None
    record: ApprovalRecord | None = None
    changed: bool = False
    shadow: str | None = None  # the [shadow] rules' verdict, when there are some
    text: str = ""  # the main argument the rules match


class CallJudge:
    def __init__(
        self,
        policy: PolicyRules,
        book: ApprovalBook,
        auto_approve: Callable[[], bool],
        started_by: str | None,
        conversation_id: str,
        shadow: PolicyRules | None,
    ) -> None:
        self._policy, self._book, self._auto_approve = policy, book, auto_approve
        self._principal = started_by or conversation_id  # Cedar's principal: the agent's requester
        self._shadow = shadow

    def plan(self, call: ToolCall, catalog: Catalog) -> CallPlan:
        try:
            spec, arguments = validate_call(catalog, call.name, call.arguments)
        except InvalidToolCall as err:
            return CallPlan(call, None, {}, "invalid", error=f"Error: {err}")
        remembered = self._book.always_allows(spec.name, spec.definition_hash())
        text = main_argument_text(spec, arguments)
        always = frozenset({spec.name}) if remembered else frozenset()
        verdict = evaluate(
            self._policy,
            spec,
            text,
            always_allow=always,
            auto_approve=self._auto_approve(),
            normalise_shell=workflow.patched(patches.SHELL_RULE_NORMALISATION),
        )
        verdict = self._with_cedar(call, spec, arguments, text, verdict)
        if verdict == "allow" and keeps_asking(self._policy, spec, arguments, text):
            verdict = "ask" if workflow.patched(patches.APPROVERS_OUTRANK_AUTO_APPROVE) else verdict
        if verdict == "allow" and spec.supplied_by_approver:
            # Only a person can give what the call lacks: no rule, always-allow or auto-approve runs it
            # unasked. A catalog holds supplied arguments only since they exist, so no history before
            # them reaches this line (no patch: the commands of every earlier history are unchanged).
            verdict = "ask"
        changed = spec.name in self._book.always_allow and not remembered
        shadow: RuleVerdict | None = None
        if self._shadow is not None:
            shadow = evaluate(self._shadow, spec, text, always_allow=always, auto_approve=self._auto_approve())
            if shadow == "allow" and (keeps_asking(self._shadow, spec, arguments, text) or spec.supplied_by_approver):
                shadow = "ask"
        return CallPlan(call, spec, arguments, verdict, changed=changed, shadow=shadow, text=text)

    def _with_cedar(
        self, call: ToolCall, spec: ToolDef, arguments: dict[str, Any], text: str, verdict: RuleVerdict
    ) -> RuleVerdict:
        """The TOML verdict with the Cedar policies beside it: a forbid of any layer denies; a permit
        allows a call the top-level rules ask about only because no rule matched (a subagent's
        layers only narrow)."""
        policy = self._policy
        texts = [layer.cedar_policies for layer in (policy, *policy.within) if layer.cedar_policies]
        if not texts or not workflow.patched(patches.CEDAR_RULES):
            return verdict
        said = [cedar_verdict(cedar, self._principal, spec.name, call.id, arguments, text) for cedar in texts]
        if "deny" in said:
            return "deny"
        alone = policy.cedar_policies is not None and not policy.within
        if alone and said[0] == "allow" and verdict == "ask" and asking_rule(policy, spec, text) is None:
            return "allow"
        return verdict


def shadow_differences(plans: list[CallPlan]) -> list[dict[str, Any]]:
    """The calls the [shadow] rules judged otherwise (workflows/shadow_rules.py records them)."""
    return [
        {
            "call_id": plan.call.id,
            "tool_name": plan.spec.name,
            "main_argument": plan.text,
            "live": plan.verdict,
            "shadow": plan.shadow,
        }
        for plan in plans
        if plan.spec is not None and plan.shadow is not None and plan.shadow != plan.verdict
    ]
