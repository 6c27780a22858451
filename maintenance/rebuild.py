"""Rebuild the approvals projection from Temporal, after its database was lost or went stale.

Temporal's history is the source of truth: the visibility listing names every conversation (and
each of its runs), each run's history holds every approval row the workflow wrote, decisions
included (maintenance/history_decisions.py), and each running one answers `get_state` (which needs
a worker, so every query is bounded). The writes
are the projection's own idempotent ones, with the workflow's own event keys, so running a rebuild
twice, or alongside a live worker, never duplicates a row or an event.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError

from config.settings import Settings
from core.contract import WORKFLOW_TYPE
from core.conversation_model import ConversationState, Resolution, TurnStatus
from core.projection_model import ApprovalRequestedProjection, ConversationProjection, ProjectionEvent
from doors.control import get_state
from maintenance.history_decisions import recorded_approvals, replay_approvals
from storage.store import ProjectionStore
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY, StatusKeeper

QUERY_TIMEOUT = timedelta(seconds=5)
PARALLEL_QUERIES = 8
ENDED_REASON = "the conversation ended before a decision"
REBUILT_REASON = "decided in Temporal; restored by a projection rebuild"


@dataclass
class RebuildReport:
    conversations: int = 0
    queried: int = 0
    ended: int = 0
    pending_restored: int = 0
    stale_resolved: int = 0
    unreachable: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"rebuilt {self.conversations} conversation(s): {self.queried} queried, {self.ended} ended; "
            f"{self.pending_restored} pending approval(s) restored, {self.stale_resolved} stale row(s) resolved"
        )
        if self.unreachable:
            text += (
                f"; {len(self.unreachable)} did not answer (is a worker running?), status taken from search"
                f" attributes: {', '.join(sorted(self.unreachable))}"
            )
        return text


async def rebuild_projection(
    client: Client, settings: Settings, query_timeout: timedelta = QUERY_TIMEOUT
) -> RebuildReport:
    """Bring the projection at settings.approvals_db in line with Temporal; safe to run at any time."""
    store = ProjectionStore(settings.approvals_db)
    try:
        return await _rebuild(client, settings, store, query_timeout)
    finally:
        await store.close()


async def _rebuild(
    client: Client, settings: Settings, store: ProjectionStore, query_timeout: timedelta
) -> RebuildReport:
    report = RebuildReport()
    latest: dict[str, WorkflowExecution] = {}
    runs: dict[str, list[WorkflowExecution]] = {}
    # The conversations of this deployment: those its workers (settings.task_queue) run.
    listing = f"WorkflowType = '{WORKFLOW_TYPE}' AND TaskQueue = '{settings.task_queue}'"
    async for execution in client.list_workflows(listing):
        runs.setdefault(execution.id, []).append(execution)
        known = latest.get(execution.id)
        if known is None or _newer(execution, known):
            latest[execution.id] = execution
    report.conversations = len(latest)
    gate = asyncio.Semaphore(PARALLEL_QUERIES)

    async def one(execution: WorkflowExecution) -> None:
        async with gate:
            # The rows as the workflow wrote them (oldest run first), then its state now.
            added: set[str] = set()
            unresolved = set(await store.unresolved_request_ids(execution.id))
            for run in sorted(runs[execution.id], key=lambda r: r.start_time):
                added |= await replay_approvals(store, await recorded_approvals(client, run))
            healed = len(unresolved - set(await store.unresolved_request_ids(execution.id)))
            await _rebuild_one(client, store, execution, query_timeout, report, added)
            report.stale_resolved += healed

    await asyncio.gather(*(one(execution) for execution in latest.values()))
    return report


def _newer(candidate: WorkflowExecution, known: WorkflowExecution) -> bool:
    running = WorkflowExecutionStatus.RUNNING
    if (candidate.status == running) != (known.status == running):
        return candidate.status == running
    return candidate.start_time > known.start_time


async def _rebuild_one(
    client: Client,
    store: ProjectionStore,
    execution: WorkflowExecution,
    timeout: timedelta,
    report: RebuildReport,
    replayed: set[str],  # request rows the history replay restored just before
) -> None:
    cid = execution.id
    # Any write from a workflow task after this moment carries a later version and wins.
    version = int(time.time() * 1000) * 1000
    if execution.status != WorkflowExecutionStatus.RUNNING:
        report.ended += 1
        await store.project_conversation(_conversation(cid, "closed", 0, version, parent_id=execution.parent_id))
        await _resolve_stale(store, cid, {}, keep=set(), fallback="canceled")
        return
    try:
        state = await get_state(client, cid, timeout=timeout)
    except RPCError:
        report.unreachable.append(cid)
        attributes = execution.typed_search_attributes
        status = attributes.get(TURN_STATUS_KEY) or "running"
        pending = attributes.get(PENDING_APPROVALS_KEY) or 0
        conversation = _conversation(cid, status, pending, version, parent_id=execution.parent_id)  # type: ignore[arg-type]
        await store.project_conversation(conversation)
        return
    report.queried += 1
    # Awaited first, added after: `report.x += await ...` would read x before the await and lose
    # what the other conversations' tasks added meanwhile.
    restored = await _write_state(store, state, version, execution.parent_id)
    keep = {approval.request_id for approval in state.pending_approvals}
    resolved = await _resolve_stale(store, cid, state.resolutions, keep=keep, fallback=None)
    report.pending_restored += restored + len(replayed & keep)
    report.stale_resolved += resolved


def _conversation(
    cid: str,
    status: TurnStatus,
    pending: int,
    version: int,
    events: list[ProjectionEvent] | None = None,
    parent_id: str | None = None,  # a subagent's parent, as Temporal records it
) -> ConversationProjection:
    return ConversationProjection(
        conversation_id=cid,
        turn_status=status,
        pending_count=pending,
        updated_at=datetime.now(UTC),
        version=version,
        events=events or [],
        parent_id=parent_id,
    )


async def _write_state(
    store: ProjectionStore, state: ConversationState, version: int, parent_id: str | None = None
) -> int:
    """The conversation row and every pending approval, with the events the workflow would write."""
    keeper = StatusKeeper(state.conversation_id)
    pending = state.pending_approvals
    conversation = _conversation(state.conversation_id, state.turn_status, len(pending), version, parent_id=parent_id)
    await store.project_conversation(conversation)
    restored = 0
    for approval in pending:
        rid = approval.request_id
        events = [
            keeper.event("permission.request", rid, {"request_id": rid}),
            keeper.event("turn.awaiting_approval", rid, {"pending": len(pending)}),
        ]
        restored += await store.project_approval_requested(
            ApprovalRequestedProjection(
                approval=approval, kv_snapshot=state.kv, conversation=conversation.model_copy(update={"events": events})
            ),
        )
    return restored


async def _resolve_stale(
    store: ProjectionStore,
    cid: str,
    resolutions: dict[str, Resolution],
    *,
    keep: set[str],
    fallback: Resolution | None,
) -> int:
    """Rows the projection shows pending that Temporal has resolved (or whose conversation ended)."""
    chosen: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for request_id in await store.unresolved_request_ids(cid):
        resolution = resolutions.get(request_id, fallback)
        if request_id in keep or resolution is None:
            continue
        chosen[request_id] = resolution
        reasons[request_id] = ENDED_REASON if request_id not in resolutions else REBUILT_REASON
    return await store.resolve_stale(cid, chosen, keep, reasons) if chosen else 0
