"""Where a tool's activity goes: to the conversation's host, without a trip through the server when it can.

A pinned conversation's tools must run on its host, whose workspace holds what they wrote before.
Scheduling them on its host queue costs a pass through the server's matching for every
tool, the largest part of an approval's latency over a bare workflow. Usually the worker running
the workflow is itself on that host (the host was picked by a worker that held the workflow), so
the activity goes on the workflow's own queue, where the SDK hands it straight back to this worker
(eager activity execution), marked with the one host that may run it. A worker of another host (the
workflow moved after a crash, or the task was not taken eagerly) answers `wrong_host` without
running anything, and the call then goes to the host queue as before, where it may find that the
host left and move (host_moves.py). Which way it went is an activity result in history, so a replay
takes the same path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.tool_run_model import ToolRequest, ToolResult
    from workflows import activity_calls as calls
    from workflows.host_moves import HostKeeper


async def run_pinned(
    request: ToolRequest,
    source: str,
    summary: str,
    hosts: HostKeeper,
    detour: Callable[[ToolRequest], Awaitable[ToolRequest]] | None = None,
) -> ToolResult:
    """Run one tool call on the conversation's host (none chosen: on any worker of the shared
    queue), moving to another host when its own is gone (host_moves.py). `detour` is called once
    when the call goes round by its host queue, where it may wait for the host, and gives the
    request to send there (workflows/approved_calls.py)."""
    host_queue = await hosts.host_queue_now()
    if host_queue is None:
        return await calls.run_tool(request, source, summary)
    eager = workflow.patched(patches.TOOLS_EAGER_ON_HOST)
    while True:
        if hosts.restore_from is not None:
            request = request.model_copy(update={"restore_from": hosts.restore_from})
        if eager:
            here = await calls.run_tool(request.model_copy(update={"run_on": host_queue}), source, summary)
            if not here.wrong_host:
                return _told(here, hosts)
            if detour is not None:
                request, detour = await detour(request), None
        on_host = f"{summary} (on its host)" if eager else summary
        outcome = await hosts.run_on_host_queue(request, source, on_host, host_queue)
        if isinstance(outcome, ToolResult):
            return _told(outcome, hosts)
        await hosts.move(outcome, host_queue)
        host_queue = hosts.host_queue or host_queue


def _told(result: ToolResult, hosts: HostKeeper) -> ToolResult:
    """The first result after a move says so to the model."""
    note = hosts.moved_note(result)
    return result if note is None else result.model_copy(update={"content": f"{note}\n\n{result.content}"})
