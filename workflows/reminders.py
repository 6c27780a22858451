"""The durable timers of one waiting request: notify, remind, escalate, warn, and finally expire.

Every timer has a summary, so the Temporal Web UI shows what the request waits for next, and each
ends the moment a decision lands; a conversation's approved call hands its last timer to its tool
runner, which cancels it with the tool's result, off the decision's workflow task. Notifications
are started, never awaited: a receiver that is down retries on its own while the request (and the
turn) go on. A request whose rules name no channel and no timer waits exactly as it always did (one
expiry timer, no patch marker), so conversations recorded before notifications existed replay
unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import ApprovalRecord, NotificationInput, NotificationKind
    from core.policy_rules import NotifyPlan
    from workflows.notify_outbox import NotificationOutbox


@dataclass(frozen=True)
class _Due:
    at: datetime
    key: str  # names the timer among those already fired
    kind: NotificationKind | None  # None: the expiry itself
    number: int
    summary: str


class RequestTimers:
    """The timers of one request; `expire` resolves it, `changed` mirrors new approvers or deadlines."""

    def __init__(
        self,
        record: ApprovalRecord,
        expire: Callable[[], None],
        changed: Callable[[str], Awaitable[None]],
        outbox: NotificationOutbox,
        keep: Callable[[asyncio.Future[None]], None] | None = None,
    ) -> None:
        self._record = record
        # Given `keep` (behind a patch): the timer a decision ends is handed to it, not cancelled
        # here, so the decision's workflow task cancels no timer (see ToolRunner._keep_timer).
        self._keep = keep
        self._expire = expire
        self._changed = changed
        self._outbox = outbox  # sends, and keeps what is on its way across continue-as-new
        self._fired: set[str] = set()
        self._escalated = False
        self._plan: NotifyPlan | None = None

    async def wait(self) -> None:
        """Until the request is resolved, by a decision or by its expiry."""
        record = self._record
        if record.notify is not None and workflow.patched(patches.APPROVAL_NOTIFICATIONS):
            self._plan = record.notify
            self._send("request", 1, record.notify.channels)
        keep = self._keep if self._keep is not None and workflow.patched(patches.TIMERS_AFTER_THE_TOOL) else None
        while record.resolution is None:
            due = self._next_due()
            seen = len(record.extensions)
            if await self._time_came(due, seen, keep):
                if due.kind is None:
                    self._expire()
                    return
                self._fired.add(due.key)
                await self._fire(due)
                continue
            if len(record.extensions) != seen and record.resolution is None:
                await self._changed(f"extended to {record.expires_at.isoformat()}")

    async def _time_came(
        self, due: _Due, extensions_seen: int, keep: Callable[[asyncio.Future[None]], None] | None
    ) -> bool:
        """Wait for a decision, an extension or the due time; True when the time came first."""
        ended = self._decided_or_extended(extensions_seen)
        timeout = max(due.at - workflow.now(), timedelta(milliseconds=1))
        if keep is None:
            try:
                await workflow.wait_condition(ended, timeout=timeout, timeout_summary=due.summary)
            except TimeoutError:
                return True
            return False
        timer = asyncio.ensure_future(workflow.sleep(timeout, summary=due.summary))
        await workflow.wait_condition(lambda: timer.done() or ended())
        if not ended():
            return True
        if self._record.resolution is None:
            timer.cancel()  # an extension: the next due time gets its own timer
        elif not timer.done():
            keep(timer)
        return False

    def _decided_or_extended(self, extensions_seen: int) -> Callable[[], bool]:
        record = self._record
        return lambda: record.resolution is not None or len(record.extensions) != extensions_seen

    def _next_due(self) -> _Due:
        record, plan = self._record, self._plan
        expiry = _Due(record.expires_at, "expiry", None, 1, f"approval {record.request_id} expires")
        if plan is None:
            return expiry
        rid, candidates = record.request_id, []
        if plan.remind_after is not None:
            for n in range(1, plan.reminders + 1):
                at = record.created_at + timedelta(seconds=plan.remind_after * n)
                candidates.append(_Due(at, f"reminder-{n}", "reminder", n, f"approval {rid}: reminder {n}"))
        if plan.escalate_after is not None:
            at = record.created_at + timedelta(seconds=plan.escalate_after)
            candidates.append(_Due(at, "escalation", "escalation", 1, f"approval {rid}: escalate"))
        if plan.warn_before_expiry is not None:
            n = len(record.extensions) + 1  # a new deadline earns a new warning
            at = record.expires_at - timedelta(seconds=plan.warn_before_expiry)
            if at > record.created_at:
                candidates.append(_Due(at, f"expiry_warning-{n}", "expiry_warning", n, f"approval {rid}: warn {n}"))
        waiting = [d for d in candidates if d.key not in self._fired and d.at < record.expires_at]
        return min(waiting, key=lambda d: d.at, default=expiry)

    async def _fire(self, due: _Due) -> None:
        plan, record = self._plan, self._record
        assert plan is not None and due.kind is not None
        if due.kind == "escalation":
            self._escalated = True
            new = [f"group:{g}" for g in plan.escalate_groups if f"group:{g}" not in (record.approvers or [])]
            if new and record.approvers is not None:
                record.approvers = [*record.approvers, *new]
                await self._changed(f"escalated to {', '.join(new)}")
            self._send("escalation", 1, plan.escalate_channels)
            return
        channels = plan.channels + [c for c in plan.escalate_channels if self._escalated and c not in plan.channels]
        self._send(due.kind, due.number, channels)

    def _send(self, kind: NotificationKind, number: int, channels: list[str]) -> None:
        record = self._record
        for channel in channels:
            suffix = "" if number == 1 else f"-{number}"
            notification = NotificationInput(
                key=f"{record.request_id}:{channel}:{kind}{suffix}",
                channel=channel,
                kind=kind,
                number=number,
                request_id=record.request_id,
                conversation_id=record.conversation_id,
                tool_name=record.tool_name,
                arguments=record.arguments,
                approvers=record.approvers,
                expires_at=record.expires_at,
                created_at=record.created_at,
                preview=record.preview,
                why=record.why,
            )
            self._outbox.send(notification)
