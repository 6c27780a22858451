"""Scenario 3: SIGKILL the worker with 1,000 approvals waiting, start two new ones, approve them all.

Once with the projection and ledger on SQLite, once on PostgreSQL; and floors' drains (as many bare
workflows waiting on a signal, with the same number of new workers): the floor runs one activity
once signalled, the turn floor that activity and then one model call with its result, the work a
turn of ours does after its decision without our bookkeeping. The turn floor is drained right after
each backend's drain, and that backend is compared with it. So recovery is also a ratio: our drain
rate over each floor's. The SQLite run reuses the
conversations the parked scenario left waiting (their last worker was SIGKILLed), or parks its own.
Correctness is proven by counts outside the workflow: lines the approved shell command appended (one
per conversation), the scripted model's request log (two per conversation: the tool call and the
answer; one per turn floor workflow), and the execution ledger.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.worker import Replayer

from bench import phases, script
from bench.cpu_use import cpu_seconds, ms_per_approval
from bench.drive import (
    approve,
    bounded,
    first_task_completed_at,
    new_ids,
    pending_requests,
    scalar,
    start_floors,
    wait_idle,
)
from bench.floor import (
    FLOOR_RUNNER,
    FLOOR_SIGNAL,
    FLOOR_WORKFLOW,
    TURN_FLOOR_WORKFLOW,
    FloorWorkflow,
    TurnFloorWorkflow,
)
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.replay_cost import replay_cpu_ms
from bench.sc_parked import park
from bench.stats import median
from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from storage.store import ProjectionStore
from worker import replayer

BACKENDS = ("sqlite", "postgresql")
WORKERS = 2  # the new workers that take over after the SIGKILL
SAMPLED = 20  # histories read to count the Temporal tasks one approval costs
# The floors drained, by their key under `recovery`: the workflow type, and whether each of its
# workflows asks the model once after its tool. The smoke test drains the first alone (a drain waits
# out the killed worker's sticky queue, 10 s).
FLOORS: dict[str, tuple[str, bool]] = {"floor": (FLOOR_WORKFLOW, False), "floor_turn": (TURN_FLOOR_WORKFLOW, True)}
_TASKS = (EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
_TIMED_OUT = EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT


async def after_the_decision(
    bench: Bench, ids: list[str], replayer: Replayer, signal: str, update: str | None = None
) -> dict[str, float]:
    """Over SAMPLED workflows, from the decision (its signal, or the workflow task that took its
    update) to the end of its turn: workflow tasks plus activity tasks per approval (median), the
    work the server and the workers do per drain; and the share whose first task was handed to the
    killed worker and timed out there (its sticky queue, seconds later) before a new worker got it.
    And what replaying the first one's history up to its decision costs (bench/replay_cost.py)."""
    counts, timed_out, before = [], 0, None
    # Spread over the drain: the decisions sent first are the ones most likely to reach the killed worker.
    for wid in ids[:: max(1, len(ids) // SAMPLED)][:SAMPLED]:
        events = (await bench.client.get_workflow_handle(wid).fetch_history()).events
        start = phases.decision_start(events, signal, update)
        if start is not None:
            counts.append(sum(e.event_type in _TASKS for e in events[start:]))
            timed_out += any(e.event_type == _TIMED_OUT for e in events[start:])
            before = before or (wid, events[:start])
    replay = {}
    if before is not None:
        replay = {
            "history_events_before_the_decision": len(before[1]),
            "replay_cpu_ms_before_the_decision": await replay_cpu_ms(replayer, *before),
        }
    return {
        "tasks_per_approval": median(counts) if counts else 0.0,
        "share_timed_out_on_the_killed_worker": round(timed_out / len(counts), 2) if counts else 0.0,
        **replay,
    }


async def _progress(db: Any, count: int, stop: asyncio.Event, label: str) -> None:
    while not stop.is_set():
        await asyncio.sleep(5)
        idle = scalar(db, "SELECT count(*) FROM ui_conversations WHERE turn_status = 'idle'")
        say(f"{label}: {idle}/{count} turns complete")


async def run(bench: Bench, count: int) -> dict[str, Any]:
    """The same recovery with the projection and ledger on SQLite, then on PostgreSQL, each followed
    by a turn floor's drain, then the floor's. Each backend is compared with the turn floor drained
    right after it: the machine's speed drifts over the scenario's quarter of an hour (a turn floor
    took 85 ms of CPU per approval in one run and 113 ms in the next), and drains minutes apart
    would carry that drift into the ratio."""
    backends: dict[str, dict[str, Any]] = {}
    turn_floors: dict[str, dict[str, Any]] = {}
    for backend in BACKENDS:
        backends[backend] = await recover(bench, count, backend)
        if "floor_turn" in FLOORS:
            turn_floors[backend] = await floor_drain(bench, count, "floor_turn", after=backend)
    floors = {key: await floor_drain(bench, count, key) for key in FLOORS if key != "floor_turn"}
    if turn_floors:
        floors["floor_turn"] = next(iter(turn_floors.values()))
    floor = floors["floor"]

    # Each backend over its own drain of a floor (`over`, by backend).
    def rate_ratio(over: dict[str, dict[str, Any]]) -> dict[str, float]:
        return {b: round(r["approvals_per_second"] / over[b]["approvals_per_second"], 2) for b, r in backends.items()}

    the_floor = {b: floor for b in backends}
    ratio = rate_ratio(the_floor)
    # The drain is bound by Temporal tasks: at the floor's cost per task, the best ratio is the task ratio.
    task_ratio = {
        b: round(floor["tasks_per_approval"] / max(r["tasks_per_approval"], 1), 2) for b, r in backends.items()
    }

    # And by CPU: with the cores as full as the floor's, the ratio is the floor's CPU per approval over
    # ours. Unlike the drain rates, it does not move with how many first tasks waited on the killed worker.
    def cpu_ratio_to(over: dict[str, dict[str, Any]]) -> dict[str, float]:
        return {
            b: round(over[b]["cpu_ms_per_approval"]["total"] / r["cpu_ms_per_approval"]["total"], 2)
            for b, r in backends.items()
        }

    cpu_ratio = cpu_ratio_to(the_floor)
    say(f"recovery: drain rate / the floor's: {ratio}; tasks: {task_ratio}; CPU: {cpu_ratio}")
    result = {"approvals": count, "workers": WORKERS, "backends": backends, **floors, "ratio_to_floor": ratio}
    if turn_floors:
        result["floor_turn_after"] = turn_floors
        result["ratio_to_turn_floor"] = rate_ratio(turn_floors)
        result["cpu_ratio_to_turn_floor"] = cpu_ratio_to(turn_floors)
        say(
            f"recovery: drain rate / the turn floor's: {result['ratio_to_turn_floor']};"
            f" CPU: {result['cpu_ratio_to_turn_floor']}"
        )
    return {**result, "task_ratio_to_floor": task_ratio, "cpu_ratio_to_floor": cpu_ratio}


async def floor_drain(bench: Bench, count: int, key: str = "floor", after: str | None = None) -> dict[str, Any]:
    """A floor's drain (FLOORS[key]): as many bare workflows waiting on a signal, their worker
    SIGKILLed, the same number of new workers, every signal sent the same way; each workflow then
    runs its tool activity (and the turn floor's its model call). `after`: the backend whose drain
    this one follows, for a floor drained once per backend."""
    workflow, asks_model = FLOORS[key]
    name = key if after is None else f"{key}-after-{after}"
    label = f"recovery ({name})"
    settings = bench.settings(f"recovery-{name}")
    ids = new_ids(f"rec-{name}", count)
    bench.start_worker(settings, "floor", DEFAULT_CACHE)
    await start_floors(bench.client, workflow, ids, settings.task_queue)
    deadline = time.monotonic() + 600
    await bounded(ids, lambda fid: first_task_completed_at(bench.client, fid, deadline), 50)
    bench.stop_workers()  # SIGKILL with every workflow waiting
    t_restart = time.monotonic()
    for _ in range(WORKERS):
        bench.start_worker(settings, "floor", DEFAULT_CACHE)
    cpu_before, t0 = cpu_seconds(bench), time.monotonic()
    await bounded(ids, lambda fid: bench.client.get_workflow_handle(fid).signal(FLOOR_SIGNAL), 50)
    sent_seconds = time.monotonic() - t0
    await asyncio.wait_for(bounded(ids, lambda fid: bench.client.get_workflow_handle(fid).result(), 50), 900)
    total = time.monotonic() - t0
    cpu = ms_per_approval(cpu_before, cpu_seconds(bench), count)
    bench.stop_workers()
    floor_replayer = Replayer(
        workflows=[TurnFloorWorkflow, FloorWorkflow],
        workflow_runner=FLOOR_RUNNER,  # as bench/worker_main.py runs the floors
        data_converter=bench.client.data_converter,
    )
    tasks = await after_the_decision(bench, ids, floor_replayer, FLOOR_SIGNAL)
    ran, asked = ran_counts(settings), script.requests_per_tag(bench.model)
    bench.check(f"{label}: every tool ran exactly once", count, sum(1 for fid in ids if ran.get(fid) == 1))
    if asks_model:
        bench.check(f"{label}: model asked exactly once per workflow", count, sum(asked[fid] == 1 for fid in ids))
    say(f"{label}: {count} signals drained in {total:.1f}s ({count / total:.1f}/s)")
    return {
        "workflows": count,
        "workers": WORKERS,
        "workers_start_seconds": round(t0 - t_restart, 1),
        "seconds_to_send_all_signals": round(sent_seconds, 1),
        "seconds_until_every_one_ran": round(total, 1),
        "approvals_per_second": round(count / total, 1),
        "tools_run": sum(ran.get(fid, 0) for fid in ids),
        "model_requests": sum(asked[fid] for fid in ids),
        **tasks,
        "cpu_ms_per_approval": cpu,
    }


async def recover(bench: Bench, count: int, backend: str) -> dict[str, Any]:
    label = f"recovery ({backend})"
    handed = bench.shared.pop("parked", None) if backend == "sqlite" else None
    if handed is not None and len(handed[1]) == count:
        settings, ids = handed
        say(f"{label}: taking over the {count} conversations the parked scenario left waiting")
    else:
        settings, ids = bench.settings(f"recovery-{backend}", backend=backend), new_ids(f"rec-{backend[:2]}", count)
        await park(bench, settings, ids, DEFAULT_CACHE)
        bench.stop_workers()  # SIGKILL with every approval waiting
    requests = pending_requests(settings.approvals_db)
    t_restart = time.monotonic()
    for _ in range(WORKERS):  # on one host: both poll its task queue, where the tools are pinned
        bench.start_worker(settings, "ours", DEFAULT_CACHE)
    cpu_before, t0 = cpu_seconds(bench), time.monotonic()
    stop = asyncio.Event()
    reporter = asyncio.create_task(_progress(settings.approvals_db, count, stop, label))
    store = ProjectionStore(settings.approvals_db)  # one open store, as a running UI holds it
    await bounded([requests[cid] for cid in ids], lambda rid: approve(bench.client, settings, rid, store), 50)
    await store.close()
    sent_seconds = time.monotonic() - t0
    await wait_idle(settings.approvals_db, count, timeout=900)
    total = time.monotonic() - t0
    cpu = ms_per_approval(cpu_before, cpu_seconds(bench), count)
    stop.set()
    await reporter
    bench.stop_workers()
    tasks = await after_the_decision(
        bench, ids, replayer(bench.client.data_converter), SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
    )
    ran = ran_counts(settings)
    asked = script.requests_per_tag(bench.model)
    # A database of its own per scenario phase (PostgreSQL) or a file of its own (SQLite): only these rows.
    finished = scalar(settings.ledger_db, "SELECT count(*) FROM tool_executions WHERE state = 'finished'")
    bench.check(f"{label}: every approved tool ran exactly once", count, sum(1 for cid in ids if ran.get(cid) == 1))
    bench.check(f"{label}: no tool ran more than once", 0, sum(1 for n in ran.values() if n > 1))
    bench.check(f"{label}: model asked exactly twice per conversation", count, sum(asked[c] == 2 for c in ids))
    bench.check(f"{label}: ledger shows each tool finished", count, finished)
    say(f"{label}: {count} approvals complete in {total:.1f}s ({count / total:.1f}/s)")
    return {
        "approvals": count,
        "workers": WORKERS,
        "workers_start_seconds": round(t0 - t_restart, 1),
        "seconds_to_send_all_decisions": round(sent_seconds, 1),
        "seconds_until_every_turn_complete": round(total, 1),
        "approvals_per_second": round(count / total, 1),
        "tools_run": sum(ran.get(cid, 0) for cid in ids),
        "model_requests": sum(asked[c] for c in ids),
        "assistant_messages": 2 * count,
        **tasks,
        "cpu_ms_per_approval": cpu,
    }
