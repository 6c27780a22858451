"""The approval book: which requests wait, how each was resolved, and who may still decide.

Pure workflow state. A decision binds to one request id of this conversation; the first
decision wins and every later one is refused with a named error, so a stale or replayed
"approve" can never land on another call.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from core.approvers import may_decide
from core.contract import ERROR_INVALID_EDIT
from core.conversation_model import ApprovalRecord, DecisionInput, Door, Resolution
from core.refusals import Refusal, RequestFacts, approvals_missing, decision_refusal

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

    def records(self) -> list[ApprovalRecord]:
        """Every request of this run, in the order they were opened."""
        return list(self._records.values())

    def pending(self) -> list[ApprovalRecord]:
        return [record for record in self._records.values() if record.resolution is None]

    def pending_count(self) -> int:
        return len(self.pending())

    def resolutions(self) -> dict[str, Resolution]:
        current = {rid: rec.resolution for rid, rec in self._records.items() if rec.resolution is not None}
        return {**self._carried, **current}

    def facts(self, request_id: str) -> RequestFacts | None:
        """What the book knows of a request, for the one refusal rule (core/refusals.py)."""
        record = self._records.get(request_id)
        if record is None:
            carried = self._carried.get(request_id)
            if carried is None:
                return None
            return RequestFacts(request_id, self._conversation_id, {}, resolution=carried)
        return RequestFacts(
            request_id=request_id,
            conversation_id=self._conversation_id,
            arguments=record.arguments,
            approvers=record.approvers,
            not_by=record.not_by,
            required=record.required,
            approved_by=tuple(record.approved_by),
            resolution=record.resolution,
            decided_by=record.decided_by,
            editable=record.editable,
            supplied_by_approver=tuple(record.supplied_by_approver),
        )

    def refuse(self, decision: DecisionInput) -> Refusal | None:
        """Why the decision must be refused, or None when it may be applied: the rule every door
        applies first (core/refusals.py), then the edit's checks that need the tool (core/edits.py)."""
        found = decision_refusal(self.facts(decision.request_id), decision, self._conversation_id)
        if found is not None or decision.decision != "edit":
            return found
        if self.edits is None:
            return Refusal(ERROR_INVALID_EDIT, f"{decision.request_id} cannot be edited")
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
        if decision.supplied and decision.decision != "deny":  # the last approval's values are the ones that run
            record.sealed_supplied = dict(decision.supplied)
            record.supplied_by = {name: decided_by or "unknown" for name in sorted(decision.supplied)}
        if decision.decision != "deny" and record.required > 1:
            record.approved_by.append(decision.principal or decision.decided_by or "unknown")
            if approvals_missing(record.required, len(record.approved_by)) > 0:
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
                same_tool = same_tool and not sibling.supplied_by_approver  # each waits for its own values
                # A sibling someone else must approve keeps waiting for them.
                alone = sibling.required == 1 and may_decide(
                    sibling.approvers, decision.principal, decision.groups, sibling.not_by
                )
                if same_tool and alone:
                    reason = f"always allowed with {record.request_id}"
                    self._resolve(sibling, "allow", reason, decision.decided_by, now)
                    sibling.decided_via = decision.door or "signal"
        return decision.decision

    def resolve_by(
        self, request_id: str, resolution: Resolution, reason: str, decided_by: str, door: Door, now: datetime
    ) -> None:
        """Something other than a person decided a request: a change of the rules (door `policy`,
        workflows/policy_change.py) or the pre-screen (door `prescreen`, workflows/before_asking.py)."""
        record = self._records[request_id]
        if record.resolution is None:
            self._resolve(record, resolution, reason, decided_by, now)
            record.decided_via = door

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
