"""What the read model keeps of a supplied argument, on both backends: the names a request needs (its
row, by which the doors' claim refuses an approval without them) and, once decided, who supplied
each (the audit and the card), never the value, sealed or not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from config.settings import Settings
from core.contract import ERROR_SUPPLY_REFUSED
from core.conversation_model import ApprovalRecord, DecisionInput
from core.projection_model import ApprovalRequestedProjection, ApprovalResolvedProjection, ConversationProjection
from core.refusals import DecisionRefused
from storage.store import ProjectionStore
from tests.support.helpers import rows
from tests.support.postgres import on_both_backends


@on_both_backends
async def test_the_row_names_what_is_supplied_and_the_audit_who_supplied_it(settings: Settings) -> None:
    now = datetime.now(UTC)
    asked = ApprovalRecord(
        request_id="perm_conv-1_c2",
        conversation_id="conv-1",
        turn_id="turn_1",
        tool_call_id="c2",
        tool_name="mcp__vault__login",
        permission_type="write",
        arguments={"user": "bob"},
        created_at=now,
        expires_at=now + timedelta(hours=1),
        supplied_by_approver=["password"],
    )
    decided = asked.model_copy(
        update={
            "resolution": "allow",
            "decided_by": "alice",
            "resolved_at": now,
            "decided_via": "cli",
            "supplied_by": {"password": "alice"},
            "sealed_supplied": {"password": "sealed1:the-sealed-value"},
        }
    )
    waiting = ConversationProjection(
        conversation_id="conv-1", turn_status="awaiting_approval", pending_count=1, updated_at=now, version=1
    )
    running = waiting.model_copy(update={"turn_status": "running", "pending_count": 0, "version": 2})
    store = ProjectionStore(settings.approvals_db)
    try:
        await store.project_approval_requested(
            ApprovalRequestedProjection(approval=asked, kv_snapshot={}, conversation=waiting)
        )
        with pytest.raises(DecisionRefused) as refused:
            await store.claim_decision(DecisionInput(request_id=asked.request_id, decision="allow", decided_by="bob"))
        await store.project_approval_resolved(ApprovalResolvedProjection(approval=decided, conversation=running))
        row = await store.approval(asked.request_id)
        trail = await store.audit_trail(None)
    finally:
        await store.close()
    assert refused.value.error_type == ERROR_SUPPLY_REFUSED, "the claim judges by the row's names"
    assert row is not None and row["supplied_by_approver"] == ["password"] and row["supplied"] == {"password": "alice"}
    [audited] = [entry for entry in trail if entry.get("request_id") == asked.request_id]
    assert audited["supplied"] == {"password": "alice"}
    stored = rows(settings.approvals_db, "SELECT details_json FROM ui_pending_approvals")
    assert "sealed1" not in str(stored) and "password" in str(stored)
    if isinstance(settings.approvals_db, Path):
        files = b"".join(path.read_bytes() for path in settings.approvals_db.parent.glob("*.db*"))
        assert b"the-sealed-value" not in files
