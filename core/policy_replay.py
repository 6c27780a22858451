"""Recorded decisions judged again under other rules: what a new policy would have asked, allowed
and denied, before anyone adopts it.

Only asked calls leave a record (a call the rules allowed outright is not in the audit), so the
replay says how many of the prompts people saw the new rules would still show, which calls a
person refused that the new rules would have let run without one (listed first, flagged), and
which calls people approved that the new rules would deny. Built-in tools are matched on their
rule argument as the worker matches them; a tool the built-in catalog does not describe is judged
by its name only, and a rule with an argument pattern that names it counts as asking, so the
replay never claims a saved prompt it cannot see.

Pure: rows in the shape of storage/audit.py, no model and no Temporal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from core.conversation_model import APPROVED_RESOLUTIONS
from core.policy import Rule, deciding_rules, evaluate
from core.policy_rules import PolicyRules, RuleVerdict
from core.rule_shadows import shadowed_allows
from core.tool_specs import TOOL_SPECS, main_argument_text

# Decisions in which no person let the call run as the model asked it.
REFUSED = ("deny", "expired", "edit")
NO_RULE = "(no rule matches: asked)"
AUTO_APPROVE = "(mode = auto_approve)"


@dataclass(frozen=True)
class Judged:
    """One recorded call under the new rules."""

    row: dict[str, Any]
    verdict: RuleVerdict
    rules: tuple[str, ...]  # the rules of the new policy behind the verdict
    by_name_only: bool

    @property
    def rule(self) -> str:
        if self.rules:
            return " + ".join(self.rules)
        return AUTO_APPROVE if self.verdict == "allow" else NO_RULE

    def why_flagged(self) -> str:
        decision, by = self.row.get("decision"), self.row.get("decided_by")
        if decision == "expired":
            return "would have run without a person: it expired, nobody decided it"
        done = "edited (it ran with other arguments)" if decision == "edit" else "denied"
        return f"would have run without a person: {done} by {by or 'an unnamed person'}"

    def as_dict(self, flagged: bool = False) -> dict[str, Any]:
        row = self.row
        item = {
            "request_id": row.get("request_id"),
            "conversation_id": row.get("conversation_id"),
            "tool": row.get("tool_name"),
            "arguments": row.get("arguments"),
            "decision": row.get("decision"),
            "decided_by": row.get("decided_by"),
            "door": row.get("decided_via"),
            "created_at": str(row["created_at"]) if row.get("created_at") is not None else None,
            "outcome": row.get("outcome"),
            "verdict_under_new": self.verdict,
            "rule": self.rule,
        }
        if flagged:
            item |= {"flagged": True, "why": self.why_flagged()}
        return item


def judge(rules: PolicyRules, row: dict[str, Any]) -> Judged:
    """One audit row's call under `rules` (the arguments the model asked, not an edit's)."""
    tool = str(row["tool_name"])
    spec = TOOL_SPECS.get(tool)
    if spec is None:
        verdict, deciding = _by_name(rules, tool)
        return Judged(row, verdict, tuple(deciding), True)
    argument = main_argument_text(spec, dict(row.get("arguments") or {}))
    verdict = evaluate(rules, spec, argument)
    return Judged(row, verdict, tuple(deciding_rules(rules, spec, argument)), False)


def _by_name(rules: PolicyRules, tool: str) -> tuple[RuleVerdict, list[str]]:
    def naming(texts: list[str]) -> list[tuple[str, Rule]]:
        return [(text, rule) for text in texts if fnmatchcase(tool, (rule := Rule.parse(text)).tool)]

    deny, ask, allow = naming(rules.deny), naming(rules.ask), naming(rules.allow)
    whole = [text for text, rule in deny if rule.pattern is None]
    if whole:
        return "deny", whole[:1]
    unsure = [text for text, rule in deny + ask if rule.pattern is not None]
    if unsure:  # it may match or not: the replay cannot see the argument it globs over
        return "ask", unsure[:1]
    if rules.mode == "auto_approve":
        return "allow", []
    whole = [text for text, rule in ask if rule.pattern is None]
    if whole:
        return "ask", whole[:1]
    whole = [text for text, rule in allow if rule.pattern is None]
    return ("allow", whole[:1]) if whole else ("ask", [])


@dataclass
class ReplayReport:
    judged: list[Judged]
    shadows: list[dict[str, str]] = field(default_factory=list)

    def refused_but_allowed(self) -> list[Judged]:
        """Calls a person refused (denied, edited) or nobody decided that the new rules allow."""
        return [item for item in self.judged if item.row.get("decision") in REFUSED and item.verdict == "allow"]

    def approved_but_denied(self) -> list[Judged]:
        return [
            item for item in self.judged if item.row.get("decision") in APPROVED_RESOLUTIONS and item.verdict == "deny"
        ]

    def as_dict(self) -> dict[str, Any]:
        verdicts = Counter(item.verdict for item in self.judged)
        asked_before = len(self.judged)  # every recorded request is a prompt a person was shown
        return {
            "recorded": len(self.judged),
            "asked_before": asked_before,
            "asked_under_new": verdicts["ask"],
            "allowed_under_new": verdicts["allow"],
            "denied_under_new": verdicts["deny"],
            "prompts_saved": asked_before - verdicts["ask"],
            "judged_by_name_only": sum(1 for item in self.judged if item.by_name_only),
            "allowed_but_denied_by_a_person": [item.as_dict(flagged=True) for item in self.refused_but_allowed()],
            "denied_but_approved": [item.as_dict() for item in self.approved_but_denied()],
            "by_tool": self._by_tool(),
            "by_pattern": self._by_pattern(),
            "shadowed_allow_rules": self.shadows,
            "not_replayed": "calls the recorded rules allowed or denied without asking left no record",
        }

    def _by_tool(self) -> dict[str, dict[str, int]]:
        tools: dict[str, Counter[str]] = {}
        for item in self.judged:
            counts = tools.setdefault(str(item.row["tool_name"]), Counter())
            counts["recorded"] += 1
            counts[f"{item.verdict}_under_new"] += 1
        keys = ("recorded", "ask_under_new", "allow_under_new", "deny_under_new")
        return {tool: {key: counts[key] for key in keys} for tool, counts in sorted(tools.items())}

    def _by_pattern(self) -> list[dict[str, Any]]:
        """Per rule of the new policy that decided calls: how many, and what people had decided."""
        groups: dict[tuple[str, str], Counter[str]] = {}
        for item in self.judged:
            counts = groups.setdefault((item.rule, item.verdict), Counter())
            counts["calls"] += 1
            decision = item.row.get("decision")
            counts["approved"] += decision in APPROVED_RESOLUTIONS
            counts["refused"] += decision in REFUSED
        rows = [{"rule": rule, "verdict": verdict, **counts} for (rule, verdict), counts in groups.items()]
        for row in rows:
            row.setdefault("approved", 0)
            row.setdefault("refused", 0)
        return sorted(rows, key=lambda row: (-row["calls"], row["rule"]))


def replay(rows: Iterable[dict[str, Any]], rules: PolicyRules) -> ReplayReport:
    """Every recorded request (audit rows; switches and notices are skipped) judged under `rules`."""
    judged = [judge(rules, row) for row in rows if row.get("kind", "request") == "request"]
    return ReplayReport(judged, [shadow.as_dict() for shadow in shadowed_allows(rules)])
