"""pick_tool_host and check_host: which host a conversation's tools run on, and whether it is still there.

Any worker may take these from the shared queue. pick_tool_host answers with its own host queue,
and the workflow sends every later tool of the conversation there, so the tools of one
conversation always act on one workspace, the one on the host that answered; the read model
notes the host, so `hosts` can list a host's conversations and a stopping worker can hand them
over. check_host asks Temporal when a worker last polled a host queue (workflows/host_moves.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from temporalio import activity

from config.host_polls import last_poll, polled_within
from core.hosts import HostCheck, host_of
from storage.store import ProjectionStore
from workflows.activity_calls import CHECK_HOST, PICK_TOOL_HOST

_DESCRIBE_TIMEOUT = timedelta(seconds=5)


class HostActivities:
    def __init__(self, host_queue: str, projection: ProjectionStore | None = None) -> None:
        self._host_queue = host_queue
        self._projection = projection

    @activity.defn(name=PICK_TOOL_HOST)
    async def pick_tool_host(self) -> str:
        conversation_id = activity.info().workflow_id
        if self._projection is not None and conversation_id is not None:
            try:
                await self._projection.set_tool_host(conversation_id, host_of(self._host_queue))
            except Exception as err:  # the read model's note; the pin itself is the activity's result
                activity.logger.warning("could not note the host of %s: %s", conversation_id, err)
        return self._host_queue

    @activity.defn(name=CHECK_HOST)
    async def check_host(self, host_queue: str, within_seconds: float) -> HostCheck:
        last = await last_poll(activity.client(), host_queue, _DESCRIBE_TIMEOUT)
        polled = polled_within(last, within_seconds, datetime.now(UTC))
        return HostCheck(task_queue=host_queue, polled=polled, last_poll=last)
