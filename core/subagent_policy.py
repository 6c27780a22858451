"""A subagent's rules: its parent's, narrowed by its own, never widened.

Pure workflow code. The effective rules are layers: the subagent's own set on top, every
ancestor's set in `within`. `policy.evaluate` gives a call the strictest verdict of all layers,
so every parent deny applies, an allow the parent lacks cannot appear, and a parent's ask stays
an ask. Always-allow is not part of the rules: each conversation keeps its own, so none leaks
from parent to child or back.
"""

from __future__ import annotations

from core.policy_rules import PolicyRules


def layers(rules: PolicyRules) -> list[PolicyRules]:
    """Every rule set a call must pass, each without its outer sets."""
    return [rules.model_copy(update={"within": []}), *rules.within]


def narrow(parent: PolicyRules, own: PolicyRules | None) -> PolicyRules:
    """The rules a subagent of a conversation with `parent` rules runs under.

    own: the subagent's own configuration (None: exactly the parent's). Auto-approve mode holds
    only when every layer has it; approver rules and notification channels stay the parent's, so
    the same people decide and hear of it.
    """
    if own is None:
        return parent
    outer = layers(parent)
    every_auto = own.mode == "auto_approve" and all(layer.mode == "auto_approve" for layer in outer)
    return own.model_copy(
        update={
            "mode": "auto_approve" if every_auto else "default",
            "approvers": [*parent.approvers, *own.approvers],
            "channels": {**parent.channels, **own.channels},
            "within": outer,
        }
    )
