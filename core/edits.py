"""Edit before approving: a person approves a call with arguments they changed.

Pure workflow code; the workflow's decision handlers use it through `EditDesk`. An edit keeps the
tool (it changes arguments only); the new arguments pass the checks the model's passed (the
tool's JSON schema, the workspace confinement of paths); and the rules are evaluated again on the
edited call, so an edit never widens what they allow:

- a deny rule that matches the edited call refuses the edit;
- the decider must be allowed to decide the original call *and* the edited one (approvers and
  self-approval of both);
- an edit is one person's decision, so a call that needs several approvers, as proposed or as
  edited, cannot be edited: approve or deny it as it is.

The arguments hash of an edit is the hash of the arguments the person was shown (the original
ones), like any decision's; the edited arguments travel beside it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from core.approvers import approver_refusal, approvers_for, may_decide, not_by_for, required_for
from core.contract import ERROR_EDIT_DENIED, ERROR_INVALID_EDIT, ERROR_NOT_AN_APPROVER
from core.conversation_model import ApprovalRecord, DecisionInput
from core.policy import evaluate
from core.policy_rules import PolicyRules
from core.refusals import Refusal, no_arguments, one_person_only, same_arguments
from core.supplied_arguments import supplied_note
from core.tool_arguments import validate_arguments
from core.tool_model import ToolDef
from core.tool_registry import InvalidToolCall, main_argument_text

# Histories recorded before edits existed never applied one; an edit arriving in one is ignored.
NOTE_VALUE_LIMIT = 300


class EditRefused(Exception):
    """An edit that must not be applied; error_type is the ApplicationError type doors map."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def edited_call(
    rules: PolicyRules,
    tool: ToolDef,
    record: ApprovalRecord,
    decision: DecisionInput,
    started_by: str | None,
) -> dict[str, Any]:
    """The edited arguments, validated and normalised, or EditRefused. The decider's right to
    decide the original call is checked before (ApprovalBook.refusal)."""
    rid = record.request_id
    if decision.arguments is None:
        raise EditRefused(*no_arguments(rid))
    if tool.name != record.tool_name or (record.tool_hash is not None and tool.definition_hash() != record.tool_hash):
        raise EditRefused(ERROR_INVALID_EDIT, f"the tool of {rid} is no longer the one the call was asked for")
    try:
        arguments = validate_arguments(tool, json.dumps(decision.arguments))
    except InvalidToolCall as err:
        raise EditRefused(ERROR_INVALID_EDIT, f"the edited arguments of {rid} are not valid: {err}") from None
    if arguments == record.arguments:
        raise EditRefused(*same_arguments(rid))
    if evaluate(rules, tool, main_argument_text(tool, arguments)) == "deny":
        raise EditRefused(ERROR_EDIT_DENIED, f"a deny rule of the policy matches the edited {tool.name} call of {rid}")
    needed = max(record.required, required_for(rules, tool, arguments))
    if needed > 1:
        raise EditRefused(*one_person_only(rid, needed, as_edited=needed > record.required))
    approvers = approvers_for(rules, tool, arguments)
    not_by = not_by_for(rules, tool, arguments, started_by)
    if not may_decide(approvers, decision.principal, decision.groups, not_by):
        why = approver_refusal(rid, approvers, decision.principal, decision.groups, not_by)
        raise EditRefused(ERROR_NOT_AN_APPROVER, f"{why} (as edited)")
    return arguments


class EditDesk:
    """The conversation's edit checks: its rules, its starter, and the tools of the current turn."""

    def __init__(
        self,
        rules: PolicyRules,
        started_by: str | None,
        tool_named: Callable[[str], ToolDef | None],
        enabled: Callable[[], bool],
    ) -> None:
        self._rules = rules
        self._started_by = started_by
        self._tool_named = tool_named
        # workflow.patched(EDIT_BEFORE_APPROVING, workflows/patches.py), asked only where the workflow
        # may record a marker (not in a validator).
        self.enabled = enabled

    def arguments(self, record: ApprovalRecord, decision: DecisionInput) -> dict[str, Any]:
        tool = self._tool_named(record.tool_name)
        if tool is None:
            raise EditRefused(ERROR_INVALID_EDIT, f"the tool of {record.request_id} is not offered any more")
        return edited_call(self._rules, tool, record, decision, self._started_by)

    def checked(self, record: ApprovalRecord, decision: DecisionInput) -> dict[str, Any] | None:
        """The edited arguments, or None for a refused edit."""
        try:
            return self.arguments(record, decision)
        except EditRefused:
            return None

    def refusal(self, record: ApprovalRecord, decision: DecisionInput) -> Refusal | None:
        try:
            self.arguments(record, decision)
        except EditRefused as err:
            return Refusal(err.error_type, str(err))
        return None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= NOTE_VALUE_LIMIT else f"{text[:NOTE_VALUE_LIMIT]}… ({len(text)} characters)"


def changes(original: dict[str, Any], edited: dict[str, Any]) -> list[str]:
    """Each changed argument as `name: old → new` (absent on one side reads `(none)`)."""
    out = []
    for key in sorted(set(original) | set(edited)):
        if original.get(key, ...) == edited.get(key, ...):
            continue
        old = _shown(original[key]) if key in original else "(none)"
        new = _shown(edited[key]) if key in edited else "(none)"
        out.append(f"{key}: {old} → {new}")
    return out


def edit_note(record: ApprovalRecord) -> str:
    """What the model is told before the result of a call a person edited."""
    assert record.edited_arguments is not None
    listed = "; ".join(changes(record.arguments, record.edited_arguments))
    because = f" Reason: {record.reason}" if record.reason else ""
    return (
        f"Note: {record.decided_by} changed the arguments of this {record.tool_name} call before approving it,"
        f" and it ran with the changed arguments ({listed}).{because}"
    )


def ran_with(record: ApprovalRecord | None, arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The arguments a decided call runs with (the supplied values join them in the tool's activity
    only), and the note its result starts with (None: unedited, nothing supplied)."""
    if record is None:
        return arguments, None
    notes = [edit_note(record)] if record.edited_arguments is not None else []
    if record.supplied_by:
        notes.append(supplied_note(record.supplied_by))
    ran = record.edited_arguments if record.edited_arguments is not None else arguments
    return ran, "\n".join(notes) or None
