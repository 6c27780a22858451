"""Tools an earlier release left on the host queue of a host that is gone: found, and moved.

This release schedules a tool on its host queue with a schedule-to-start timeout, so a tool whose
host vanished moves by itself (workflows/host_moves.py). A tool that an earlier release sent to
such a host queue before the deploy (an approval given after its host was already gone) carries no such
timeout and would wait for that host forever. The watch finds them the way an operator would: for
each conversation Temporal lists as running a turn, `describe()` names its pending activities with
their task queue and schedule-to-start timeout; a tool scheduled on a host queue with none, older
than HOST_GONE_SECONDS, on a host queue no worker polled in that time, gets SIGNAL_HOST_LEFT (why
`host_gone`), and the conversation moves it to a live host like any other. Run by every worker,
every half of HOST_GONE_SECONDS (at most STRANDED_CHECK_SECONDS); a second signal for the same host
queue changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client
from temporalio.service import RPCError

from config.host_polls import last_poll, polled_within
from core.contract import SIGNAL_HOST_LEFT, WORKFLOW_TYPE
from core.hosts import HostLeft
from workflows.activity_calls import TOOL_ACTIVITIES

log = logging.getLogger(__name__)
STRANDED_CHECK_SECONDS = 60.0
RPC_TIMEOUT = timedelta(seconds=5)
_RUNNING_TURNS = f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TurnStatus = 'running'"


async def stranded_host_queues(client: Client, conversation_id: str, gone_seconds: float, now: datetime) -> list[str]:
    """The host queues this conversation's tools wait on with no timeout of their own, past gone_seconds."""
    description = await client.get_workflow_handle(conversation_id).describe(rpc_timeout=RPC_TIMEOUT)
    found = []
    for pending in description.raw_description.pending_activities:
        options = pending.activity_options
        host_queue = options.task_queue.name
        if (
            pending.activity_type.name in TOOL_ACTIVITIES.values()
            and pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
            and "@" in host_queue
            and options.schedule_to_start_timeout.ToTimedelta() == timedelta(0)
            and now - pending.scheduled_time.ToDatetime(tzinfo=UTC) > timedelta(seconds=gone_seconds)
        ):
            found.append(host_queue)
    return found


async def move_stranded(client: Client, gone_seconds: float) -> int:
    """One pass: how many conversations were told their host left."""
    now = datetime.now(UTC)
    told = 0
    async for execution in client.list_workflows(_RUNNING_TURNS, rpc_timeout=RPC_TIMEOUT):
        for host_queue in await stranded_host_queues(client, execution.id, gone_seconds, now):
            if polled_within(await last_poll(client, host_queue, RPC_TIMEOUT), gone_seconds, now):
                continue
            left = HostLeft(task_queue=host_queue, why="host_gone")
            await client.get_workflow_handle(execution.id).signal(SIGNAL_HOST_LEFT, left, rpc_timeout=RPC_TIMEOUT)
            log.info(
                "conversation %s waits on host queue %s, which no worker polls: told to move", execution.id, host_queue
            )
            told += 1
    return told


async def watch_stranded(client: Client, gone_seconds: float) -> None:
    """Until cancelled: a pass every half of HOST_GONE_SECONDS, at most every STRANDED_CHECK_SECONDS."""
    every = min(STRANDED_CHECK_SECONDS, gone_seconds / 2)
    while True:
        try:
            await move_stranded(client, gone_seconds)
        except RPCError as err:
            log.warning("could not look for tools stranded on a gone host: %s", err)
        await asyncio.sleep(every)
