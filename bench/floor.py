"""The floor: the least a Temporal workflow can do for an approval, to measure ours against.

It waits on one signal (or, as the doors send ours, one update) and then runs one activity that
runs the same shell command as the approved tool of ours, through the same tool function and in
the same sandbox, with none of the policy, projection, ledger or model calls around it: the ratio
ours / floor is our bookkeeping. The turn floor does what a turn of ours does after its decision:
the same tool activity, then one model call, through the same client code as call_llm, that asks the
same scripted model for the answer to the tool's result, and no more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow

from config.workflow_sandbox import runner_passing_through

with workflow.unsafe.imports_passed_through():
    # The same tool code as ours; passed through because it is never run inside the sandbox.
    from activities.builtin_tools import KvStore, Workspace
    from activities.heartbeat import heartbeating
    from activities.llm import ModelEndpoint, load_client_library
    from activities.sandbox import SandboxPolicy
    from bench.script import user_text
    from core.builtin.run_shell import TOOL as RUN_SHELL
    from core.builtin.run_shell import run as run_shell
    from core.chat_model import ChatMessage, ToolCall

# The floors run in the sandbox ours runs in, their own module passed through as `workflows` is for
# ours (config/workflow_sandbox.py): else every floor workflow would load it again, a cost ours has not.
FLOOR_RUNNER = runner_passing_through("workflows", "bench.floor")
FLOOR_WORKFLOW = "BenchFloorWorkflow"
FLOOR_ACTIVITY = "bench_floor_tool"
FLOOR_SIGNAL = "approve"
FLOOR_UPDATE = "approve_now"  # the same, by update: what the doors use for ours
FLOOR_QUERY = "waiting"  # as get_state is ours: a new worker replays the workflow to answer it
BARE_REQUEST_WORKFLOW = "BenchBareRequest"
TURN_FLOOR_WORKFLOW = "BenchTurnFloorWorkflow"
TURN_FLOOR_MODEL_ACTIVITY = "bench_floor_answer"


class FloorActivities:
    def __init__(self, workspace_dir: Path, sandbox: SandboxPolicy) -> None:
        self._workspace = Workspace(workspace_dir, sandbox)

    @activity.defn(name=FLOOR_ACTIVITY)
    async def run_tool(self, command: str) -> str:
        return await run_shell(self._workspace, KvStore({}), {"command": command}, activity.heartbeat)


async def _run_tool(command: str) -> str:
    """The floor's tool, run from a floor workflow once it is approved."""
    return await workflow.execute_activity(
        FLOOR_ACTIVITY,
        command,
        start_to_close_timeout=timedelta(minutes=1),
        heartbeat_timeout=timedelta(seconds=10),
    )


@workflow.defn(name=FLOOR_WORKFLOW)
class FloorWorkflow:
    def __init__(self) -> None:
        self._approved = False

    @workflow.run
    async def run(self, command: str) -> str:
        await workflow.wait_condition(lambda: self._approved)
        return await _run_tool(command)

    @workflow.signal(name=FLOOR_SIGNAL)
    def approve(self) -> None:
        self._approved = True

    @workflow.update(name=FLOOR_UPDATE)
    def approve_now(self) -> None:
        self._approved = True

    @workflow.query(name=FLOOR_QUERY)
    def waiting(self) -> bool:
        return not self._approved


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


@dataclass
class ToolResultToAnswer:
    tag: str  # the conversation's tag, by which bench/script.py counts the model's requests
    command: str
    tool_output: str


class FloorModel:
    """The model's answer after a tool, asked as call_llm asks it (ModelEndpoint, heartbeating), with no
    read model to stream the reply to."""

    def __init__(self, endpoint: ModelEndpoint) -> None:
        self._endpoint = endpoint
        load_client_library()  # before the worker polls, as LlmActivities does for ours

    @activity.defn(name=TURN_FLOOR_MODEL_ACTIVITY)
    async def answer(self, turn: ToolResultToAnswer) -> str:
        call = ToolCall(id="call_1", name=RUN_SHELL.name, arguments=json.dumps({"command": turn.command}))
        messages = [
            ChatMessage(role="user", content=user_text(turn.tag)),
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage(role="tool", content=turn.tool_output, tool_call_id=call.id),
        ]
        reply = self._endpoint.reply(messages, [RUN_SHELL.spec.openai_schema()])
        return (await heartbeating(reply, activity.heartbeat)).content or ""


@workflow.defn(name=TURN_FLOOR_WORKFLOW)
class TurnFloorWorkflow:
    """The floor of an approved turn: after the same signal, the floor's tool activity, then the model's
    answer to its result; the workflow's id is the conversation tag its model request carries."""

    def __init__(self) -> None:
        self._approved = False

    @workflow.run
    async def run(self, command: str) -> str:
        await workflow.wait_condition(lambda: self._approved)
        output = await _run_tool(command)
        turn = ToolResultToAnswer(workflow.info().workflow_id, command, output)
        # As call_llm's: a killed worker's model call is noticed by its heartbeat, in seconds.
        return await workflow.execute_activity(
            TURN_FLOOR_MODEL_ACTIVITY,
            turn,
            start_to_close_timeout=timedelta(minutes=3),
            heartbeat_timeout=timedelta(seconds=10),
        )

    @workflow.signal(name=FLOOR_SIGNAL)
    def approve(self) -> None:
        self._approved = True
