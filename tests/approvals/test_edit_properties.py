"""Property: an edit never widens what the rules allow. Whatever the rules (deny rules, approver
rules with groups, several approvers, self-approval), the call, the edit and the decider, an edit
the workflow's approval book accepts is one the rules would have let this person approve had the
model asked for the edited call itself: no deny rule matches it, the person may decide it, and it
needs one approver. And the check is not stricter than that: such an edit is accepted."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core.approvals import ApprovalBook
from core.approvers import approvers_for, may_decide, not_by_for, required_for
from core.conversation_model import ApprovalRecord, DecisionInput, arguments_hash
from core.edits import EditDesk
from core.policy import evaluate
from core.policy_rules import ApproverRule, PolicyRules
from core.tool_arguments import validate_arguments
from core.tool_registry import InvalidToolCall, main_argument_text
from core.tool_specs import TOOL_SPECS

PATHS = ["notes.txt", "deploy/app.yaml", ".git/config", "shared/x.txt", "safe/y.txt", "../out.txt", "./notes.txt"]
COMMANDS = ["ls", "kubectl apply -f x", "sudo rm -rf /", "ls; kubectl delete pod p", "echo hi > shared/z"]
RULES = [
    "write_file(deploy/**)",
    "write_file(.git/**)",
    "write_file(shared/**)",
    "write_file",
    "run_shell(kubectl *)",
    "run_shell(sudo *)",
    "run_shell",
]
PEOPLE = ["alice", "sam", "olly"]
GROUPS = ["sre", "dev"]

approver_rules = st.builds(
    ApproverRule,
    match=st.lists(st.sampled_from(RULES), min_size=1, max_size=2),
    approvers=st.lists(st.sampled_from(PEOPLE + [f"group:{g}" for g in GROUPS]), min_size=1, max_size=3),
    required=st.integers(1, 2),
    self_approval=st.booleans(),
)
policies = st.builds(
    PolicyRules,
    ask=st.just(["write_file", "run_shell"]),
    deny=st.lists(st.sampled_from(RULES[:3] + RULES[4:6]), max_size=2),
    approvers=st.lists(approver_rules, max_size=3),
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A tool, the arguments the model proposed, and the arguments a person edits them to (which
    may be invalid: missing, extra or mistyped fields, paths outside the workspace)."""
    if draw(st.booleans()):
        original = {"path": draw(st.sampled_from(PATHS[:6])), "content": "c"}
        edited: dict[str, Any] = {"path": draw(st.sampled_from(PATHS)), "content": draw(st.sampled_from(["c", "d"]))}
        name = "write_file"
    else:
        original = {"command": draw(st.sampled_from(COMMANDS))}
        edited = {"command": draw(st.sampled_from(COMMANDS))}
        name = "run_shell"
    mangle = draw(st.sampled_from(["none", "none", "drop", "extra", "type"]))
    key = next(iter(edited))
    if mangle == "drop":
        del edited[key]
    elif mangle == "extra":
        edited["extra"] = 1
    elif mangle == "type":
        edited[key] = 7
    return name, original, edited


def _valid(name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return validate_arguments(TOOL_SPECS[name], json.dumps(arguments))
    except InvalidToolCall:
        return None


@hypothesis_settings(max_examples=600, deadline=None)
@given(
    rules=policies,
    call=calls(),
    principal=st.sampled_from([*PEOPLE, None]),
    groups=st.lists(st.sampled_from(GROUPS), max_size=2, unique=True),
    started_by=st.sampled_from([*PEOPLE, None]),
)
def test_an_accepted_edit_is_one_the_rules_would_allow_this_person_to_approve(
    rules: PolicyRules,
    call: tuple[str, dict[str, Any], dict[str, Any]],
    principal: str | None,
    groups: list[str],
    started_by: str | None,
) -> None:
    name, proposed, edited = call
    tool = TOOL_SPECS[name]
    original = _valid(name, proposed)
    if original is None or evaluate(rules, tool, main_argument_text(tool, original)) == "deny":
        return  # never asked: invalid or denied calls do not reach a person
    now = datetime(2026, 1, 1, tzinfo=UTC)
    record = ApprovalRecord(
        request_id="perm_c_call_1",
        conversation_id="c",
        turn_id="turn_1",
        tool_call_id="call_1",
        tool_name=name,
        permission_type=tool.permission_type,
        arguments=original,
        created_at=now,
        expires_at=now + timedelta(hours=1),
        tool_hash=tool.definition_hash(),
        approvers=approvers_for(rules, tool, original),
        required=required_for(rules, tool, original),
        not_by=not_by_for(rules, tool, original, started_by),
    )
    book = ApprovalBook("c", [], {})
    book.edits = EditDesk(rules, started_by, TOOL_SPECS.get, enabled=lambda: True)
    book.open(record)
    decision = DecisionInput(
        request_id=record.request_id,
        decision="edit",
        arguments=edited,
        args_hash=arguments_hash(original),
        principal=principal,
        groups=groups,
    )
    refusal = book.refuse(decision)
    event("accepted" if refusal is None else f"refused: {refusal[0]}")

    # What the rules say of the edited call, had the model asked for it directly.
    runs = _valid(name, edited)
    allowed_directly = runs is not None and (
        runs != original
        and evaluate(rules, tool, main_argument_text(tool, runs)) != "deny"
        and required_for(rules, tool, runs) == 1
        and may_decide(approvers_for(rules, tool, runs), principal, groups, not_by_for(rules, tool, runs, started_by))
    )
    allowed_originally = record.required == 1 and may_decide(record.approvers, principal, groups, record.not_by)
    assert (refusal is None) == (allowed_directly and allowed_originally), refusal

    if refusal is None:
        assert book.apply(decision, now) == "edit"
        assert record.edited_arguments == runs and record.arguments == original
        assert record.resolution == "edit" and record.tool_name == name
