"""Conversation ids come from one alphabet, refused at every door, and the projection keys each
request by its conversation, so resolving one request never touches another conversation's row."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from config.settings import Settings
from core.conversation_model import ApprovalRecord, request_id_for
from core.ids import InvalidConversationId, check_conversation_id
from core.projection_model import ApprovalRequestedProjection, ApprovalResolvedProjection, ConversationProjection
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.support.helpers import rows
from tests.support.processes import REPO_ROOT
from tests.support.stack import one_line
from tests.support.ui_fixtures import api_client

COLLIDING = "conv-a_call_1"  # with call_2 it makes the request id of conv-a with call_1_call_2
REFUSED = [COLLIDING, "a/b", "", "-lead", ".lead", "x" * 129, "conv a", "conv\n", "cönv", "a:b"]
ACCEPTED = ["conv-0123456789ab", "a", "Z.9-z", "x" * 128, "release-2.1"]


@pytest.mark.parametrize("conversation_id", ACCEPTED)
def test_the_alphabet_accepts(conversation_id: str) -> None:
    assert check_conversation_id(conversation_id) == conversation_id


@pytest.mark.parametrize("conversation_id", REFUSED)
def test_the_alphabet_refuses(conversation_id: str) -> None:
    with pytest.raises(InvalidConversationId, match="no '_', no '/'"):
        check_conversation_id(conversation_id)


async def test_control_refuses_before_temporal_sees_it(client: Client, settings: Settings) -> None:
    with pytest.raises(InvalidConversationId):
        await start_conversation(client, settings, "hi", COLLIDING)
    with pytest.raises(RPCError, match="not found"):
        await client.get_workflow_handle(COLLIDING).describe()


def test_cli_start_refuses_with_one_line_and_usage_status() -> None:
    done = subprocess.run(
        [sys.executable, "starter.py", "start", "--id", COLLIDING, "hello"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "no '_', no '/'" in one_line(done.stderr)
    assert done.stdout == ""


async def test_ui_start_refuses_with_422(client: Client, settings: Settings) -> None:
    async with api_client(settings, client) as http:
        response = await http.post("/api/conversations", json={"message": "hi", "conversation_id": COLLIDING})
        assert response.status_code == 422, response.text
        assert "no '_', no '/'" in json.dumps(response.json())
        started = await http.post("/api/conversations", json={"message": "hi", "conversation_id": "conv-ui.1"})
        assert started.status_code == 201, started.text
        assert started.json()["conversation_id"] == "conv-ui.1"
        again = await http.post("/api/conversations", json={"message": "hi", "conversation_id": "conv-ui.1"})
        assert again.status_code == 409, again.text
    with pytest.raises(RPCError, match="not found"):
        await client.get_workflow_handle(COLLIDING).describe()
    await client.get_workflow_handle("conv-ui.1").terminate("test done")


def _record(conversation_id: str, tool_call_id: str) -> ApprovalRecord:
    now = datetime.now(UTC)
    return ApprovalRecord(
        request_id=request_id_for(conversation_id, tool_call_id),
        conversation_id=conversation_id,
        turn_id="turn_1",
        tool_call_id=tool_call_id,
        tool_name="write_file",
        permission_type="write",
        arguments={"path": f"{conversation_id}.txt", "content": "x"},
        created_at=now,
        expires_at=now + timedelta(hours=1),
    )


def _conv(conversation_id: str, version: int) -> ConversationProjection:
    return ConversationProjection(
        conversation_id=conversation_id,
        turn_status="awaiting_approval",
        pending_count=1,
        updated_at=datetime.now(UTC),
        version=version,
    )


async def test_resolving_one_conversations_request_never_touches_another_conversations_row(settings: Settings) -> None:
    """Ids started before the alphabet existed may still collide: the write matches the conversation too."""
    first, second = _record("conv-a", "call_1_call_2"), _record(COLLIDING, "call_2")
    assert first.request_id == second.request_id
    store = ProjectionStore(settings.approvals_db)
    await store.project_approval_requested(
        ApprovalRequestedProjection(approval=first, kv_snapshot={}, conversation=_conv("conv-a", 1))
    )
    resolved = second.model_copy(update={"resolution": "allow", "decided_by": "ann", "resolved_at": datetime.now(UTC)})
    await store.project_approval_resolved(
        ApprovalResolvedProjection(approval=resolved, conversation=_conv(COLLIDING, 2))
    )
    await store.close()
    [row] = rows(settings.approvals_db, "SELECT * FROM ui_pending_approvals WHERE request_id = ?", first.request_id)
    assert row["conversation_id"] == "conv-a"
    assert (row["resolved_at"], row["decision"], row["decided_by"]) == (None, None, None)
