"""Where a conversation's tools run, and how they leave a host that left.

A conversation's tools run on one host (its workspace), chosen once by `pick_tool_host`. A host
goes away at every deploy and now and then for good; Temporal's own answer for worker-specific
task queues is a schedule-to-start timeout on the host queue and a move. So a tool that goes
round by its host queue (tool_dispatch.py) is scheduled there with a short schedule-to-start
timeout: past it, the conversation says where a person looks that it waits for a host no worker
polls; past HOST_GONE_SECONDS with no poll since, or at once when the host's stopping worker says
it left (SIGNAL_HOST_LEFT), the conversation moves to the host of whichever live worker answers
`pick_tool_host`. The tool then runs there on the workspace restored from its last save, and its
result tells the model that the conversation moved.

Nothing here changes the commands of a history that never met a vanished host: a timeout and the
host_left signal are events of their own, and what follows them is behind HOST_GONE_MOVES,
checked only when one happens (the timeout itself is no part of replay's command check). A tool that was
running on the host that vanished is settled by the execution ledger on its new host: "outcome
unknown", never run again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeout

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import ApprovalRecord
    from core.hosts import EVENT_HOST_BACK, EVENT_HOST_WAITING, EVENT_MOVED, MoveReason, host_of
    from core.tool_run_model import ToolRequest, ToolResult
    from workflows import activity_calls as calls
    from workflows.status import StatusKeeper

# How long a tool may sit on its host queue before the conversation checks for the host and
# says that it waits (at most HOST_GONE_SECONDS).
HOST_CHECK = timedelta(seconds=10)
_WHY = {
    "host_gone": "no worker polled it for {seconds:g} s",
    "handed_over": "its worker stopped and handed the conversation over",
    "moved": "a person moved the conversation",
}


class HostLeftWhileWaiting(Exception):
    """The host a tool waited for said it left (SIGNAL_HOST_LEFT): the tool goes elsewhere."""


class HostKeeper:
    def __init__(
        self,
        status: StatusKeeper,
        pending: Callable[[], list[ApprovalRecord]],
        host_queue: str | None,
        gone_seconds: float,
        left: list[str],
        restore_from: str | None,
    ) -> None:
        self._status, self._pending = status, pending
        self.host_queue = host_queue
        self.gone_seconds = gone_seconds
        self.left: set[str] = set(left)
        self._left_why: dict[str, MoveReason] = {}  # a host queue's reason, when not a hand-off
        self.restore_from = restore_from  # the host a move left: the next tool restores the workspace
        self._moving = asyncio.Lock()
        self._moves = 0
        self._waits = 0
        self._why: str | None = None  # the last move's reason, for the next tool's result

    async def host_queue_now(self) -> str | None:
        """Where the conversation's tools run now: picked the first time; moved first when the host
        said it left."""
        if self.host_queue is None and workflow.patched(patches.PIN_TOOLS_TO_HOST):
            self.host_queue = await calls.pick_tool_host()
        elif self.host_queue is not None and self.host_queue in self.left and workflow.patched(patches.HOST_GONE_MOVES):
            await self.move(self._left_why.get(self.host_queue, "handed_over"), self.host_queue)
        return self.host_queue

    async def host_left(self, host_queue: str, why: MoveReason = "handed_over") -> None:
        """SIGNAL_HOST_LEFT: a tool waiting there goes elsewhere; an idle conversation moves now, so
        the projection shows its new host and its next tool goes straight there."""
        self.left.add(host_queue)
        if why != "handed_over":
            self._left_why[host_queue] = why
        if self.host_queue == host_queue and not self._moving.locked() and workflow.patched(patches.HOST_GONE_MOVES):
            await self.move(why, host_queue)

    def moved_by_person(self, host_queue: str) -> str | None:
        """`starter.py move`: the next tool runs on `host_queue`, on the workspace restored from the last save."""
        before, self.host_queue = self.host_queue, host_queue
        if before is not None and before != host_queue:
            self.restore_from, self._why = host_of(before), _WHY["moved"]
        return before

    async def move(self, why: MoveReason, from_host_queue: str) -> bool:
        """Re-pin to the host of a live worker; False when the only answer was the same host."""
        async with self._moving:
            if self.host_queue != from_host_queue:  # moved already, by another waiter
                return True
            to_host_queue = await calls.pick_tool_host()
            if to_host_queue == from_host_queue:  # the host is back (the only live worker is its own): it stays
                self.left.discard(from_host_queue)
                return False
            self.host_queue, self.restore_from = to_host_queue, host_of(from_host_queue)
            self._why = _WHY[why].format(seconds=self.gone_seconds)
            self._moves += 1
            workflow.logger.info(
                "conversation %s moved from host %s to %s: %s",
                workflow.info().workflow_id,
                host_of(from_host_queue),
                host_of(to_host_queue),
                self._why,
            )
            payload = {
                "from_host": host_of(from_host_queue),
                "to_host": host_of(to_host_queue),
                "why": why,
                "by": host_of(from_host_queue),
                "door": "host",
                "at": workflow.now().isoformat(),
            }
            await self._project(EVENT_MOVED, f"moved_{workflow.info().run_id}_{self._moves}", payload)
            return True

    async def run_on_host_queue(
        self, request: ToolRequest, source: str, summary: str, host_queue: str
    ) -> ToolResult | MoveReason:
        """Run the call on `host_queue`'s host, or learn that the host left (why, to move and try again).
        Shows the wait where a person looks once it outlasts HOST_CHECK."""
        since = workflow.now()
        deadline = since + timedelta(seconds=self.gone_seconds)
        wait = min(HOST_CHECK, timedelta(seconds=self.gone_seconds))
        shown = False
        while True:
            try:
                result = await self._until_left(request, source, summary, host_queue, wait)
            except HostLeftWhileWaiting:
                return self._left_why.get(host_queue, "handed_over")
            except ActivityError as err:
                if not _never_started(err) or not workflow.patched(patches.HOST_GONE_MOVES):
                    raise
            else:
                if shown and self.host_queue == host_queue:
                    key = f"host_back_{workflow.info().run_id}_{self._waits}"
                    await self._project(EVENT_HOST_BACK, key, {"host": host_of(host_queue)})
                return result
            check = await calls.check_host(host_queue, self.gone_seconds)
            now = workflow.now()
            if not shown:
                shown = True
                await self._show_wait(host_queue, since, check.last_poll, deadline)
            if now >= deadline and not check.polled:
                return "host_gone"
            if now >= deadline:  # polled lately: alive but busy; give it another while
                deadline = now + timedelta(seconds=self.gone_seconds)
            wait = max(deadline - now, timedelta(seconds=1))

    def moved_note(self, result: ToolResult) -> str | None:
        """What the model is told with the first result after a move (None: no move to tell)."""
        if self.restore_from is None or result.wrong_host:
            return None
        left, self.restore_from = self.restore_from, None
        here = host_of(self.host_queue or "")
        note = f"Note: this conversation moved from host {left} to {here} ({self._why or 'its host left'})."
        restored = result.restored
        if restored is None:
            return f"{note} No save of its files was found: the workspace on {here} holds only what was there."
        when = restored.saved_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{note} Its files were restored as of the save at {when} ({restored.files} files)."

    async def _until_left(
        self, request: ToolRequest, source: str, summary: str, host_queue: str, wait: timedelta
    ) -> ToolResult:
        """The call on the host queue, given up when the host says it left (no command until then)."""
        running = calls.start_tool(request, source, summary, host_queue, schedule_to_start=wait)
        await workflow.wait_condition(lambda: running.done() or host_queue in self.left)
        if running.done() or not workflow.patched(patches.HOST_GONE_MOVES):
            return await running
        running.cancel()
        try:
            return await running  # it finished as the cancel went out: its result stands
        except (asyncio.CancelledError, ActivityError):
            raise HostLeftWhileWaiting(host_queue) from None

    async def _show_wait(
        self, host_queue: str, since: datetime, last_poll: datetime | None, moves_at: datetime
    ) -> None:
        self._waits += 1
        payload = {
            "host": host_of(host_queue),
            "task_queue": host_queue,  # the event's key, read by the UI and `hosts`
            "since": since.isoformat(),
            "last_poll": None if last_poll is None else last_poll.isoformat(),
            "moves_at": moves_at.isoformat(),
        }
        workflow.logger.warning(
            "conversation %s: a tool waits for host %s, which no worker polls",
            workflow.info().workflow_id,
            host_of(host_queue),
        )
        await self._project(EVENT_HOST_WAITING, f"host_waiting_{workflow.info().run_id}_{self._waits}", payload)

    async def _project(self, event: str, key: str, payload: dict[str, Any]) -> None:
        status = self._status
        snapshot = status.snapshot(status.turn_status, self._pending(), [status.event(event, key, payload)])
        await calls.project(snapshot)


def _never_started(err: ActivityError) -> bool:
    """The call sat on its host queue past its schedule-to-start timeout: no worker took it."""
    cause = err.__cause__
    return isinstance(cause, TemporalTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START
