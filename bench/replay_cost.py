"""What a new worker spends replaying a parked workflow before it can take its decision.

After a SIGKILL no worker holds the waiting workflows in its cache: the first task of each, the one
that brings its decision, replays the whole history recorded before it. That replay is part of
every approval's CPU in the recovery drain, and it grows with the workflow tasks a history holds
(each one an activation of the workflow, in the sandbox, with its payloads visited and converted).
Measured here in the bench's own process, on the same history a drain's worker replayed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

ROUNDS, REPLAYS = 3, 10  # the cheapest round of REPLAYS copies: a busy moment of this process only adds


async def replay_cpu_ms(replayer: Replayer, workflow_id: str, events: Sequence[Any]) -> float:
    """CPU milliseconds (this process's, every thread's) per replay of `events`, the history of
    `workflow_id` up to its decision; replay failures raise, as a worker's would fail the task."""
    await replayer.replay_workflow(WorkflowHistory(workflow_id, list(events)))  # the sandbox's first instance
    rounds = []
    for round_number in range(ROUNDS):
        histories = [WorkflowHistory(f"{workflow_id}-{round_number}-{n}", list(events)) for n in range(REPLAYS)]
        rounds.append(await _replayed_cpu_seconds(replayer, histories) / REPLAYS)
    return round(min(rounds) * 1000, 1)


async def _replayed_cpu_seconds(replayer: Replayer, histories: list[WorkflowHistory]) -> float:
    async def copies() -> AsyncIterator[WorkflowHistory]:
        for history in histories:
            yield history

    started = time.process_time()
    async with replayer.workflow_replay_iterator(copies()) as results:
        async for result in results:
            if result.replay_failure is not None:
                raise result.replay_failure
    return time.process_time() - started
