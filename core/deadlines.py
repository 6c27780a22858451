"""Extending a waiting request's deadline: who may, and what is recorded.

Pure workflow code. Whoever may decide a request may give it more time (the approver rules, the
self-approval rule included); the extension is recorded on the request and the request's timers
re-arm on the new expiry (workflows/reminders.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from core.approvals import ApprovalBook
from core.approvers import approver_refusal, may_decide
from core.models import (
    ERROR_ALREADY_RESOLVED,
    ERROR_NOT_AN_APPROVER,
    ERROR_UNKNOWN_APPROVAL,
    ApprovalExtension,
    ExtensionInput,
)


def extension_refusal(book: ApprovalBook, extension: ExtensionInput) -> tuple[str, str] | None:
    """Why the extension must be refused (error type, message), or None when it may be applied."""
    pending = {record.request_id: record for record in book.pending()}
    record = pending.get(extension.request_id)
    if record is None:
        earlier = book.resolutions().get(extension.request_id)
        if earlier is not None:
            return ERROR_ALREADY_RESOLVED, f"approval {extension.request_id} was already resolved: {earlier}"
        return ERROR_UNKNOWN_APPROVAL, f"no pending approval {extension.request_id}"
    if not may_decide(record.approvers, extension.principal, extension.groups, record.not_by):
        why = approver_refusal(
            extension.request_id, record.approvers, extension.principal, extension.groups, record.not_by
        )
        return ERROR_NOT_AN_APPROVER, why.replace(" decide ", " extend ")
    return None


def extend(book: ApprovalBook, extension: ExtensionInput, now: datetime) -> datetime:
    """Move the deadline (refusal() has passed) and record who did; returns the new expiry."""
    record = book.record(extension.request_id)
    record.expires_at = record.expires_at + timedelta(seconds=extension.seconds)
    record.extensions.append(
        ApprovalExtension(
            by=extension.principal or extension.decided_by or "unknown",
            at=now,
            seconds=extension.seconds,
            expires_at=record.expires_at,
            reason=extension.reason,
        )
    )
    return record.expires_at
