"""The decision and deadline handlers every workflow that holds approval requests takes: the
conversation and the approval request inherit them, so a door's signal or update means the same
in both, under the same names (core/contract.py).

A signal never fails the workflow task: a malformed or refused one is logged and changes nothing.
An update is judged by its validator (the one refusal rule, core/refusals.py, then the edit's
own checks), so a refused decision leaves no event in history.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from core import deadlines
    from core.approvals import ApprovalBook
    from core.contract import (
        ERROR_INVALID_DECISION,
        SIGNAL_APPROVAL_DECISION,
        SIGNAL_EXTEND_APPROVAL,
        UPDATE_DECIDE,
        UPDATE_EXTEND,
    )
    from core.conversation_model import DecisionInput, DecisionResult, ExtensionInput, ExtensionResult
    from workflows.handler_payloads import DECIDE_SHAPE, EXTEND_SHAPE, one_payload


class DecisionHandlers:
    """Mixed into a workflow class whose `_book` holds its requests."""

    _book: ApprovalBook

    @workflow.signal(name=SIGNAL_APPROVAL_DECISION)
    def approval_decision(self, *args: Any) -> None:
        decision = one_payload(SIGNAL_APPROVAL_DECISION, args, DecisionInput)
        if decision is None:
            return
        refusal = self._book.refuse(decision)
        if refusal is not None:
            workflow.logger.warning("decision ignored: %s", refusal.message)
            return
        self._book.apply(decision, workflow.now())

    @workflow.update(name=UPDATE_DECIDE)
    def decide(self, *args: Any) -> DecisionResult:
        decision = one_payload(UPDATE_DECIDE, args, DecisionInput)
        if decision is None:  # the validator refused it already; replay skips validators
            raise ApplicationError(DECIDE_SHAPE, type=ERROR_INVALID_DECISION, non_retryable=True)
        resolution = self._book.apply(decision, workflow.now())
        approved_by = list(self._book.record(decision.request_id).approved_by)
        handed = self._hand_resolution(decision.request_id) if decision.writes_resolution and resolution else None
        return DecisionResult(
            request_id=decision.request_id, resolution=resolution, approved_by=approved_by, resolved=handed
        )

    def _hand_resolution(self, request_id: str) -> dict[str, Any] | None:
        """The resolution just decided, for the door that sent the update to write (an ApprovalRequest
        does, see there); None: the workflow writes its own, as a conversation always does."""
        return None

    @decide.validator
    def _validate_decide(self, *args: Any) -> None:
        decision = one_payload(UPDATE_DECIDE, args, DecisionInput)
        if decision is None:
            raise ApplicationError(DECIDE_SHAPE, type=ERROR_INVALID_DECISION, non_retryable=True)
        refusal = self._book.refuse(decision)
        if refusal is not None:
            raise ApplicationError(refusal.message, type=refusal.error_type, non_retryable=True)

    @workflow.signal(name=SIGNAL_EXTEND_APPROVAL)
    def extend_approval(self, *args: Any) -> None:
        extension = one_payload(SIGNAL_EXTEND_APPROVAL, args, ExtensionInput)
        refusal = None if extension is None else deadlines.extension_refusal(self._book, extension)
        if extension is None or refusal is not None:
            workflow.logger.warning("extension ignored: %s", refusal)
            return
        deadlines.extend(self._book, extension, workflow.now())

    @workflow.update(name=UPDATE_EXTEND)
    def extend(self, *args: Any) -> ExtensionResult:
        extension = one_payload(UPDATE_EXTEND, args, ExtensionInput)
        if extension is None:
            raise ApplicationError(EXTEND_SHAPE, type=ERROR_INVALID_DECISION, non_retryable=True)
        expires_at = deadlines.extend(self._book, extension, workflow.now())
        return ExtensionResult(request_id=extension.request_id, expires_at=expires_at)

    @extend.validator
    def _validate_extend(self, *args: Any) -> None:
        extension = one_payload(UPDATE_EXTEND, args, ExtensionInput)
        if extension is None:
            raise ApplicationError(EXTEND_SHAPE, type=ERROR_INVALID_DECISION, non_retryable=True)
        refusal = deadlines.extension_refusal(self._book, extension)
        if refusal is not None:
            raise ApplicationError(refusal.message, type=refusal.error_type, non_retryable=True)
