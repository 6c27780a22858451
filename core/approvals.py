"""The approval book: which requests wait, how each was resolved, and who may still decide.

Pure workflow state. A decision binds to one request id of this conversation; the first
decision wins and every later one is refused with a named error, so a stale or replayed
"approve" can never land on another call.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from core.approvers import approver_refusal, may_decide
from core.models import (
    ERROR_ALREADY_RESOLVED,
    ERROR_INVALID_EDIT,
    ERROR_NOT_AN_APPROVER,
    ERROR_STALE_APPROVAL,
    ERROR_UNKNOWN_APPROVAL,
    ApprovalRecord,
    DecisionInput,
    Resolution,
    arguments_hash,
    request_id_for,
)

if TYPE_CHECKING:
    from core.edits import EditDesk


class ApprovalBook:
    def __init__(
        self,
        conversation_id: str,
        always_allow: list[str],
        resolved: dict[str, Resolution],
        always_allow_hashes: dict[str, str] | None = None,
    ) -> None:
        self._conversation_id = conversation_id
        self.always_allow: set[str] = set(always_allow)
        # The definition each always-allow was given for; a tool whose definition changed is asked again.
        self.always_allow_hashes: dict[str, str] = dict(always_allow_hashes or {})
        self._carried: dict[str, Resolution] = dict(resolved)
        self._records: dict[str, ApprovalRecord] = {}
        # Checks and applies edits (core/edits.py); set by the tool runner that opens requests.
        self.edits: EditDesk | None = None

    def always_allows(self, tool_name: str, definition_hash: str) -> bool:
        """Always-allowed, for this very definition (one remembered without a hash: any built-in's)."""
        if tool_name not in self.always_allow:
            return False
        remembered = self.always_allow_hashes.get(tool_name)
        return remembered is None or remembered == definition_hash

    def open(self, record: ApprovalRecord) -> None:
        self._records[record.request_id] = record

    def record(self, request_id: str) -> ApprovalRecord:
        return self._records[request_id]

    def pending(self) -> list[ApprovalRecord]:
        return [record for record in self._records.values() if record.resolution is None]

    def pending_count(self) -> int:
        return len(self.pending())

    def resolutions(self) -> dict[str, Resolution]:
        current = {rid: rec.resolution for rid, rec in self._records.items() if rec.resolution is not None}
        return {**self._carried, **current}

    def refusal(
        self,
        request_id: str,
        args_hash: str | None = None,
        principal: str | None = None,
        groups: list[str] | None = None,
        verdict: str | None = None,
    ) -> tuple[str, str] | None:
        """Why a decision for request_id must be refused, or None when it may be applied. A decision
        that carries an arguments hash binds to those arguments: any other hash is stale."""
        record = self._records.get(request_id)
        earlier = record.resolution if record is not None else self._carried.get(request_id)
        if earlier is not None:
            return ERROR_ALREADY_RESOLVED, f"approval {request_id} was already resolved: {earlier}"
        if record is not None:
            current = arguments_hash(record.arguments)
            if args_hash is not None and args_hash != current:
                return (
                    ERROR_STALE_APPROVAL,
                    f"approval {request_id} is stale: decided on arguments hash {args_hash}, the call's is {current}",
                )
            if not may_decide(record.approvers, principal, groups or [], record.not_by):
                why = approver_refusal(request_id, record.approvers, principal, groups or [], record.not_by)
                return ERROR_NOT_AN_APPROVER, why
            if verdict != "deny" and principal in record.approved_by:
                more = record.required - len(record.approved_by)
                return (
                    ERROR_ALREADY_RESOLVED,
                    f"{principal} already approved {request_id}; it needs {more} more approver(s)",
                )
            return None
        if not request_id.startswith(request_id_for(self._conversation_id, "")):
            return (
                ERROR_UNKNOWN_APPROVAL,
                f"approval {request_id} does not belong to conversation {self._conversation_id}",
            )
        return ERROR_UNKNOWN_APPROVAL, f"no approval {request_id} in conversation {self._conversation_id}"

    def refuse(self, decision: DecisionInput) -> tuple[str, str] | None:
        """refusal() of a whole decision, with an edit's own checks (core/edits.py)."""
        found = self.refusal(
            decision.request_id, decision.args_hash, decision.principal, decision.groups, decision.decision
        )
        if found is not None or (decision.decision != "edit" and decision.arguments is None):
            return found
        if decision.decision != "edit":
            return ERROR_INVALID_EDIT, f"arguments go with an edit only, not with {decision.decision}"
        if self.edits is None:
            return ERROR_INVALID_EDIT, f"{decision.request_id} cannot be edited"
        return self.edits.refusal(self._records[decision.request_id], decision)

    def apply(self, decision: DecisionInput, now: datetime) -> Resolution | None:
        """Resolve a request (refusal() has passed); always_allow also frees waiting siblings. An
        approval of a request that needs several distinct approvers counts one and returns None
        until the last one; a deny ends it at once."""
        record = self._records[decision.request_id]
        decided_by = decision.decided_by or decision.principal  # a raw decision may name only its principal
        if decision.decision == "edit":
            if self.edits is None or not self.edits.enabled():
                return None  # a history from before edits: it ignored them
            edited = self.edits.checked(record, decision)
            if edited is None:
                return None  # refused (refuse() said so first); never raise in a handler
            record.edited_arguments = edited
        record.decided_groups += [group for group in decision.groups if group not in record.decided_groups]
        if decision.decision != "deny" and record.required > 1:
            record.approved_by.append(decision.principal or decision.decided_by or "unknown")
            if len(record.approved_by) < record.required:
                return None
            decided_by = ", ".join(record.approved_by)
        self._resolve(record, decision.decision, decision.reason, decided_by, now)
        record.decided_args_hash = decision.args_hash
        record.decided_via = decision.door or "signal"
        if decision.decision == "always_allow":
            self.always_allow.add(record.tool_name)
            if record.tool_hash is not None:
                self.always_allow_hashes[record.tool_name] = record.tool_hash
            for sibling in self.pending():
                same_tool = sibling.tool_name == record.tool_name and sibling.tool_hash == record.tool_hash
                # A sibling someone else must approve keeps waiting for them.
                alone = sibling.required == 1 and may_decide(
                    sibling.approvers, decision.principal, decision.groups, sibling.not_by
                )
                if same_tool and alone:
                    reason = f"always allowed with {record.request_id}"
                    self._resolve(sibling, "allow", reason, decision.decided_by, now)
                    sibling.decided_via = decision.door or "signal"
        return decision.decision

    def expire(self, request_id: str, now: datetime, timeout_seconds: float) -> None:
        record = self._records[request_id]
        if record.resolution is None:
            self._resolve(record, "expired", f"no decision within {timeout_seconds:g} seconds", "timeout", now)

    def cancel_all(self, now: datetime) -> None:
        for record in self.pending():
            self._resolve(record, "canceled", "the conversation was closed", "close", now)

    @staticmethod
    def _resolve(
        record: ApprovalRecord, resolution: Resolution, reason: str | None, decided_by: str | None, now: datetime
    ) -> None:
        record.resolution = resolution
        record.reason = reason
        record.decided_by = decided_by or "unknown"
        record.resolved_at = now


def outcome_message(record: ApprovalRecord) -> str:
    """What the model is told about a call that did not run."""
    because = f" Reason: {record.reason}" if record.reason else ""
    if record.resolution == "deny":
        return f"Not run: {record.decided_by} denied this {record.tool_name} call.{because}"
    if record.resolution == "expired":
        return f"Not run: the approval request expired without a decision, which counts as a denial.{because}"
    return f"Not run: the request was canceled before a decision.{because}"
