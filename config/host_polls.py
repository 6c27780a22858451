"""When a worker last polled a host queue, as Temporal's task queue description says (a read
of the server every layer may make, kept with the server settings).

A live worker polls its host queue again and again (each poll waits up to a minute for a task);
a worker that stopped or died stays listed for a while with the time of its last poll. So "no
worker since T" is the newest last access among the queue's pollers, and no poller at all means
no worker has polled it lately. Read by the workflow's host check (activities/host_checks.py) and
by `starter.py hosts`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client


async def last_poll(client: Client, host_queue: str, timeout: timedelta | None = None) -> datetime | None:
    """The newest poll of the host queue's activity tasks by any worker; None: none is listed."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=host_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    )
    described = await client.workflow_service.describe_task_queue(request, timeout=timeout)
    times = [poller.last_access_time.ToDatetime(tzinfo=UTC) for poller in described.pollers]
    return max(times, default=None)


def polled_within(last: datetime | None, seconds: float, now: datetime) -> bool:
    """A worker polled within `seconds` of `now`: the host is taken to be alive."""
    return last is not None and now - last <= timedelta(seconds=seconds)
