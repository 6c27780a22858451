"""Readiness probes for `make run`: each answers "is it serving yet?" without side effects."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from temporalio.client import Client


async def wait_until(
    check: Callable[[], Awaitable[bool]], timeout: float, abort: asyncio.Event, interval: float = 0.25
) -> bool:
    """True once check() is; False on timeout or when abort is set (Ctrl-C, a child died)."""
    deadline = time.monotonic() + timeout
    while not abort.is_set():
        try:
            if await check():
                return True
        except Exception:  # not up yet: refused, reset, half-started
            pass
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
    return False


async def port_open(host: str, port: int) -> bool:
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 2.0)
    writer.close()
    return True


async def http_ok(client: httpx.AsyncClient, url: str) -> bool:
    """One client for all of a child's probes: a new client per probe built a TLS context each time."""
    response = await client.get(url)
    return response.status_code < 500


async def worker_polls(client: Client, namespace: str, task_queue: str, pid: int) -> bool:
    """The worker with this pid polls the task queue (an earlier run's poller does not count)."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return any(poller.identity.startswith(f"{pid}@") for poller in response.pollers)
