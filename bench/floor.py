"""The floor: the least a Temporal workflow can do for an approval, to measure ours against.

It waits on one signal (or, as the doors send ours, one update) and then runs one activity that
runs the same shell command as the approved tool of ours, through the same tool function and in
the same sandbox, with none of the policy, projection, ledger or model calls around it: the ratio
ours / floor is our bookkeeping.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    # The same tool code as ours; passed through because it is never run inside the sandbox.
    from activities.builtin_tools import KvStore, Workspace
    from activities.sandbox import SandboxPolicy
    from core.builtin.run_shell import run as run_shell

FLOOR_WORKFLOW = "BenchFloorWorkflow"
FLOOR_ACTIVITY = "bench_floor_tool"
FLOOR_SIGNAL = "approve"
FLOOR_UPDATE = "approve_now"  # the same, by update: what the doors use for ours
BARE_REQUEST_WORKFLOW = "BenchBareRequest"


class FloorActivities:
    def __init__(self, workspace_dir: Path, sandbox: SandboxPolicy) -> None:
        self._workspace = Workspace(workspace_dir, sandbox)

    @activity.defn(name=FLOOR_ACTIVITY)
    async def run_tool(self, command: str) -> str:
        return await run_shell(self._workspace, KvStore({}), {"command": command}, activity.heartbeat)


@workflow.defn(name=FLOOR_WORKFLOW)
class FloorWorkflow:
    def __init__(self) -> None:
        self._approved = False

    @workflow.run
    async def run(self, command: str) -> str:
        await workflow.wait_condition(lambda: self._approved)
        return await workflow.execute_activity(
            FLOOR_ACTIVITY,
            command,
            start_to_close_timeout=timedelta(minutes=1),
            heartbeat_timeout=timedelta(seconds=10),
        )

    @workflow.signal(name=FLOOR_SIGNAL)
    def approve(self) -> None:
        self._approved = True

    @workflow.update(name=FLOOR_UPDATE)
    def approve_now(self) -> None:
        self._approved = True


@workflow.defn(name=BARE_REQUEST_WORKFLOW)
class BareRequestWorkflow:
    """The floor of an approval request: a child that waits on one signal and returns, with no rules,
    read model or doors. A caller of it pays what Temporal's child path costs by itself."""

    def __init__(self) -> None:
        self._approved = False

    @workflow.run
    async def run(self) -> bool:
        await workflow.wait_condition(lambda: self._approved)
        return True

    @workflow.signal(name=FLOOR_SIGNAL)
    def approve(self) -> None:
        self._approved = True
