"""Where a tool's activity goes: to the conversation's host, without a trip through the server when it can.

A pinned conversation's tools must run on its host, whose workspace holds what they wrote before.
Scheduling them on that host's own task queue costs a pass through the server's matching for every
tool, the largest part of an approval's latency over a bare workflow. Usually the worker running
the workflow is itself on that host (the host was picked by a worker that held the workflow), so
the activity goes on the workflow's own queue, where the SDK hands it straight back to this worker
(eager activity execution), marked with the one host that may run it. A worker of another host (the
workflow moved after a crash, or the task was not taken eagerly) answers `wrong_host` without
running anything, and the call then goes to the host's queue as before. Which way it went is an
activity result in history, so a replay takes the same path.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.models import ToolRequest, ToolResult
    from workflows import activity_calls as calls

# Histories from before this choice send every pinned tool to the host's queue directly.


async def run_pinned(
    request: ToolRequest, source: str, summary: str, host_queue: str | None, detour: Callable[[], None] | None = None
) -> ToolResult:
    """Run one tool call on host_queue's host (None: on any worker of the shared queue). `detour`
    is called when the call goes round by its host's queue, where it may wait for the host."""
    if host_queue is None or not workflow.patched(patches.TOOLS_EAGER_ON_HOST):
        return await calls.run_tool(request, source, summary, host_queue)
    here = await calls.run_tool(request.model_copy(update={"run_on": host_queue}), source, summary)
    if not here.wrong_host:
        return here
    if detour is not None:
        detour()
    if request.resolved is not None:  # the host may be down a while: show the decision now
        await calls.project(request.resolved)
        request = request.model_copy(update={"resolved": None})
    return await calls.run_tool(request, source, f"{summary} (on its host)", host_queue)
