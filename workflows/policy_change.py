"""A change of the rules reaches a running conversation, and re-judges what waits for a person.

The rules arrive in the workflow input, so a conversation decided every call under the rules of
its start. `starter.py rules reload` (and a worker that sees POLICY_FILE change) send the new rules
by signal (SIGNAL_POLICY_CHANGED, the new PolicyRules): from then on every call is judged under them, and each request
still waiting is judged again. One a deny rule now covers is denied, one an allow rule now covers
(and no approver rule holds for a person) is approved, both with door `policy`; the others keep
waiting. The signal is in history, so a replay changes the same requests at the same point.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.approvers import keeps_asking
    from core.conversation_model import ConversationInput, Resolution
    from core.policy import evaluate
    from core.policy_rules import PolicyRules
    from core.subagent_policy import narrow
    from core.tool_registry import Catalog, main_argument_text


def adopt(current: PolicyRules, new: PolicyRules, start: ConversationInput) -> None:
    """Make `current` the new rules, in place (the runner, its previews and its edits hold it); a
    subagent keeps its parent's narrowing of them."""
    if start.subagent is not None:
        new = narrow(new, start.delegation.rules)
    for name in PolicyRules.model_fields:
        setattr(current, name, getattr(new, name))


def rejudge(book: ApprovalBook, policy: PolicyRules, catalog: Catalog, now: datetime) -> list[str]:
    """Resolve each waiting request the new rules now decide; the ids resolved."""
    if not workflow.patched(patches.POLICY_CHANGE_REJUDGES):
        return []
    changed = []
    for record in book.pending():
        spec = catalog.get(record.tool_name)
        if spec is None:
            continue
        text = main_argument_text(spec, record.arguments)
        verdict = evaluate(policy, spec, text)
        resolution: Resolution
        if verdict == "deny":
            resolution, why = "deny", "a deny rule of the changed policy covers it"
        elif (
            verdict == "allow"
            and not keeps_asking(policy, spec, record.arguments, text)
            and record.required <= 1
            and not record.supplied_by_approver  # it waits for a person's values, whatever the rules
        ):
            resolution, why = "allow", "an allow rule of the changed policy covers it"
        else:
            continue
        book.resolve_by(record.request_id, resolution, why, "policy", "policy", now)
        changed.append(record.request_id)
    return changed
