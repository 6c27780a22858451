"""A worker subprocess for the bench: ours (worker.build_worker), the floors (the approval's and the
turn's), or the callers of an approval request (the floor's activity and bench/request_callers.py),
with a chosen cache.

Run as `python -m bench.worker_main --kind ours --cache 1000`; settings come from the contract's
environment variables, like `python worker.py`. It prints "ready" once it polls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from temporalio.worker import Worker

from activities.llm import ModelEndpoint
from activities.process_watch import watch_children_by_pidfd
from bench.floor import (
    FLOOR_RUNNER,
    BareRequestWorkflow,
    FloorActivities,
    FloorModel,
    FloorWorkflow,
    TurnFloorWorkflow,
)
from bench.request_callers import RequestCaller
from config.settings import Settings
from config.telemetry import setup_tracing
from payload_store.connection import connect
from worker import HostWorker, build_worker, metrics_options


async def main(kind: str, cache: int) -> None:
    settings = Settings()
    watch_children_by_pidfd()  # as worker.py, for ours and the floor alike
    # As worker.py: traces with OTEL_* set, /metrics with WORKER_METRICS_PORT set.
    setup_tracing("approvals-worker")
    client = await connect(settings, **metrics_options(settings))
    worker: HostWorker | Worker
    if kind == "ours":
        worker = build_worker(client, settings, max_cached_workflows=cache)
    else:
        settings.workspace_dir.mkdir(parents=True, exist_ok=True)
        # The same sandbox as ours: the floor's tool runs the way the approved tool of ours runs.
        floor = FloorActivities(settings.workspace_dir, settings.sandbox_policy())
        activities: list[Callable[..., Any]] = [floor.run_tool]
        if kind == "floor":  # the turn floor's model call goes where ours goes, as ours makes it
            activities.append(FloorModel(ModelEndpoint.of(settings)).answer)
        worker = Worker(
            client,
            task_queue=settings.task_queue,
            workflows=[FloorWorkflow, BareRequestWorkflow, TurnFloorWorkflow] if kind == "floor" else [RequestCaller],
            activities=activities,
            max_cached_workflows=cache,
            workflow_runner=FLOOR_RUNNER,  # the sandbox ours runs in: the ratio is our bookkeeping
        )
    async with worker:
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["ours", "floor", "callers"], default="ours")
    parser.add_argument("--cache", type=int, default=1000)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(args.kind, args.cache))
