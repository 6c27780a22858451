"""The failure watch: a conversation whose workflow task keeps failing shows `failed`, with why.

A workflow task that fails (a payload over 2 MB, a non-deterministic replay after a bad deploy, an
exception in workflow code) is retried by Temporal without end, and the workflow writes nothing
while it fails: the projection would show `running` or `awaiting_approval` forever. None of those
failures is visible to the workflow itself, and several never reach Python at all (the SDK's core
detects non-determinism and oversized payloads), so no interceptor can report them. The watch
therefore asks Temporal, from outside, the way an operator would: every few seconds, for each
conversation the projection shows open, `describe()` tells whether its workflow task is being
retried; when it is, the newest workflow-task outcome in its history (read backwards, one page)
says whether the last attempt failed, and with what. Then the projection row becomes `failed` and a
`turn.failed` event carries the reason, so the inbox, `show`, `conversations` and `pending` all say
so. It works with any Temporal server, with no server setting, whichever worker runs the bad code.
The same look finds a completed `ApprovalRequest` still shown pending, whose door died before it
wrote the resolution the request handed it, and writes that (workflows/request_healing.py).

It heals: once a fixed worker completes the task, the workflow's next status write (newer version)
wins; if the workflow has nothing to write, the watch sees the task healthy, asks the workflow for
its status and writes that back. Cost: one `describe` per open conversation per interval
(FAILURE_WATCH_INTERVAL seconds, 5 by default), run by every worker process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.service import RPCError

from core.conversation_model import TurnStatus
from core.projection_model import ConversationProjection, ProjectionEvent
from storage.store import ProjectionStore
from workflows.request_healing import heal_closed_request

log = logging.getLogger(__name__)
KIND = "workflow_task"  # marks the watch's own turn.failed events, so it knows which rows to heal
RPC_TIMEOUT = timedelta(seconds=5)
MAX_REASON = 600


@dataclass(frozen=True)
class TaskFailure:
    run_id: str
    event_id: int
    attempt: int
    reason: str


async def failing_task(client: Client, description: WorkflowExecutionDescription) -> TaskFailure | None:
    """How this conversation's workflow task fails, or None while it is healthy (or closed)."""
    conversation_id = description.id
    raw = description.raw_description
    if description.status != WorkflowExecutionStatus.RUNNING or not raw.HasField("pending_workflow_task"):
        return None
    attempt = raw.pending_workflow_task.attempt
    if attempt < 2:
        return None
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=conversation_id, run_id=description.run_id),
        maximum_page_size=50,
    )
    page = await client.workflow_service.get_workflow_execution_history_reverse(request, timeout=RPC_TIMEOUT)
    for event in page.history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return None
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            attrs = event.workflow_task_failed_event_attributes
            cause = WorkflowTaskFailedCause.Name(attrs.cause).removeprefix("WORKFLOW_TASK_FAILED_CAUSE_")
            message = attrs.failure.message or "no message"
            reason = f"workflow task failing (attempt {attempt}, {cause.lower()}): {message}"
            return TaskFailure(description.run_id, event.event_id, attempt, reason[:MAX_REASON])
    return None


def _version() -> int:
    """Newer than any write the workflow made before this moment, older than any it makes after."""
    return int(time.time() * 1000) * 1000 + 999


async def _open_rows(store: ProjectionStore) -> list[dict[str, object]]:
    """Every conversation not closed; `marked`: this watch set it failed (its last event is the watch's)."""
    found = await store.open_conversations()
    return [{**row, "marked": row["turn_status"] == "failed" and _marked(row.pop("last_payload"))} for row in found]


def _marked(payload_json: object) -> bool:
    try:
        return isinstance(payload_json, str) and json.loads(payload_json).get("kind") == KIND
    except ValueError:
        return False


class FailureWatch:
    def __init__(self, client: Client, store: ProjectionStore, interval: float) -> None:
        self._client = client
        self._store = store
        self._interval = interval

    async def run(self) -> None:
        while True:
            try:
                await self.check_once()
            except Exception:  # the watch must outlive a bad moment (Temporal restarting, a locked file)
                log.exception("failure watch: check failed; trying again in %ss", self._interval)
            await asyncio.sleep(self._interval)

    async def check_once(self) -> None:
        for row in await _open_rows(self._store):
            conversation_id = str(row["conversation_id"])
            try:
                description = await self._client.get_workflow_handle(conversation_id).describe(rpc_timeout=RPC_TIMEOUT)
                if await heal_closed_request(self._client, self._store, description):
                    log.info("approval request %s: wrote the resolution its door did not", conversation_id)
                    continue
                failure = await failing_task(self._client, description)
                if failure is not None and not row["marked"]:
                    await self._mark_failed(conversation_id, row, failure)
                elif failure is None and row["marked"]:
                    await self._heal(conversation_id)
            except (RPCError, WorkflowQueryFailedError, WorkflowQueryRejectedError) as err:
                log.warning("failure watch: cannot check %s: %s", conversation_id, err)

    async def _mark_failed(self, conversation_id: str, row: dict[str, object], failure: TaskFailure) -> None:
        log.error("conversation %s: %s", conversation_id, failure.reason)
        payload = {"reason": failure.reason, "kind": KIND, "previous_status": row["turn_status"]}
        key = f"{conversation_id}:{failure.run_id}:{failure.event_id}"
        await self._write(conversation_id, "failed", int(str(row["pending_count"])), "turn.failed", key, payload)

    async def _heal(self, conversation_id: str) -> None:
        from doors.control import get_state  # control imports the CLI's claims; keep this module light

        handle = self._client.get_workflow_handle(conversation_id)
        if (await handle.describe(rpc_timeout=RPC_TIMEOUT)).status != WorkflowExecutionStatus.RUNNING:
            return  # terminated or timed out while failing: it stays failed, with its reason
        state = await get_state(self._client, conversation_id, timeout=RPC_TIMEOUT)
        if state.turn_status == "failed":
            return
        log.info("conversation %s: its workflow task completes again (%s)", conversation_id, state.turn_status)
        key = f"{conversation_id}:{state.turn_id}:{_version()}"
        payload: dict[str, object] = {"turn_status": state.turn_status}
        pending = len(state.pending_approvals)
        await self._write(conversation_id, state.turn_status, pending, "turn.recovered", key, payload)

    async def _write(
        self, conversation_id: str, status: TurnStatus, pending: int, event: str, key: str, payload: dict[str, object]
    ) -> None:
        projection = ConversationProjection(
            conversation_id=conversation_id,
            turn_status=status,
            pending_count=pending,
            updated_at=datetime.now(UTC),
            version=_version(),
            events=[
                ProjectionEvent(
                    event_key=f"{key}:{event}", event_type=event, conversation_id=conversation_id, payload=payload
                )
            ],
        )
        await self._store.project_conversation(projection)
