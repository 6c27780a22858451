"""Extending a waiting request's deadline: who may, and what is recorded.

Pure workflow code. Whoever may decide a request may give it more time (the approver rules, the
self-approval rule included); the extension is recorded on the request and the request's timers
re-arm on the new expiry (workflows/reminders.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from core.approvals import ApprovalBook
from core.conversation_model import ApprovalExtension, ExtensionInput
from core.refusals import Refusal, already_resolved, unknown, who_refusal


def extension_refusal(book: ApprovalBook, extension: ExtensionInput) -> Refusal | None:
    """Why the extension must be refused, or None when it may be applied: whoever may decide a
    waiting request may extend it (core/refusals.py)."""
    facts = book.facts(extension.request_id)
    if facts is None:
        return unknown(extension.request_id)
    if facts.resolution is not None:
        return already_resolved(extension.request_id, facts.resolution, facts.decided_by)
    return who_refusal(facts, extension.principal, extension.groups, verb="extend")


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
