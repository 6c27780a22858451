"""pick_tool_host: which host a conversation's tools run on (Temporal's worker-specific task queues).

Any worker may take this activity from the shared queue; it answers with its own host's task
queue, and the workflow sends every later tool of the conversation there. So the tools of one
conversation always act on one workspace, the one on the host that answered.
"""

from __future__ import annotations

from temporalio import activity

from workflows.activity_calls import PICK_TOOL_HOST


class HostActivities:
    def __init__(self, host_task_queue: str) -> None:
        self._queue = host_task_queue

    @activity.defn(name=PICK_TOOL_HOST)
    async def pick_tool_host(self) -> str:
        return self._queue
