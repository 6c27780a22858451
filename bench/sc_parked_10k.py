"""Scenario: ten thousand conversations waiting for approval on one worker, and a SIGKILL.

One worker with the default workflow cache parks every conversation (each waits for a person);
its RSS and the seconds to park them all are taken. It is SIGKILLed; a new worker with the default
cache answers a get_state query from every conversation (each replayed), then is SIGKILLed in turn
and a worker with a small cache does the same. Every one must still be waiting. Bounded: each
phase has a deadline (PHASE_SECONDS) and fails the scenario when it passes.

The floor does the same with as many bare workflows (bench/floor.py's, waiting on one signal) on a
floor worker started the same way with the same cache: started until each has completed its first
workflow task, the worker SIGKILLed, and a new one (default cache) answering a query from each, as
many in flight as ours. ratio_to_floor is ours over the floor's, for both times.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from bench.drive import bounded, first_task_completed_at, new_ids, start_floors
from bench.floor import FLOOR_QUERY, FLOOR_WORKFLOW
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.sc_parked import SMALL_CACHE, count_waiting, cpu_seconds, park, sample_rss
from bench.stats import mib

PHASE_SECONDS = 3600.0
QUERY_CONCURRENCY = 16  # queries in flight after a SIGKILL, ours and the floor's alike
POLLED = 100  # floor workflows watched while they park (every n-th started, and the last)
POLL_SECONDS = 0.5
SAMPLED = 20  # histories read to count the Temporal tasks it takes to park one
_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
# Events that cost the server a write of their own: a visibility record's, a timer's.
_ALSO_COUNTED = {
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: "search_attribute_upserts",
    EventType.EVENT_TYPE_TIMER_STARTED: "timers",
}
_KINDS = ("workflow_tasks", "activities", "local_activities", "markers", *_ALSO_COUNTED.values(), "history_events")

Answering = Callable[[Bench, list[str]], Awaitable[int]]


async def _ours_answering(bench: Bench, ids: list[str]) -> int:
    return await count_waiting(bench, ids, concurrency=QUERY_CONCURRENCY)


async def _floor_answering(bench: Bench, ids: list[str]) -> int:
    """The floor's query, asked as ours is: a new worker replays each workflow to answer it."""

    async def waiting(fid: str) -> bool:
        handle = bench.client.get_workflow_handle(fid)
        return bool(await handle.query(FLOOR_QUERY, result_type=bool, rpc_timeout=timedelta(seconds=60)))

    return sum(await bounded(ids, waiting, QUERY_CONCURRENCY))


async def _queried_after_kill(
    bench: Bench, ids: list[str], settings: Any, cache: int, kind: str = "ours", answering: Answering = _ours_answering
) -> dict[str, Any]:
    bench.stop_workers()  # SIGKILL: no graceful shutdown
    worker = bench.start_worker(settings, kind, cache)
    idle = await sample_rss(worker.proc.pid)
    server = bench.server.proc
    assert server is not None
    meter, t0 = _CpuMeter(worker=worker.proc.pid, server=server.pid), time.monotonic()
    survivors = await asyncio.wait_for(answering(bench, ids), PHASE_SECONDS)
    seconds = time.monotonic() - t0
    used = meter.used()
    held = await sample_rss(worker.proc.pid)
    say(f"parked_10k ({kind}): cache {cache}: {survivors}/{len(ids)} answered after SIGKILL in {seconds:.1f}s")
    return {
        "max_cached_workflows": cache,
        "rss_idle_mib": mib(idle),
        "rss_after_queries_mib": mib(held),
        "seconds_until_every_one_answers": round(seconds, 1),
        "survivors": survivors,
        **_cpu_per(len(ids), **used),
    }


async def _floor_park(bench: Bench, settings: Any, ids: list[str]) -> dict[str, Any]:
    """Start the bare workflows on a fresh floor worker and time until each has completed its first task.
    Only a hundredth of them is watched meanwhile (each history read is work for the server too); every
    one's time is read from its history afterwards, so the watching sets no time."""
    worker = bench.start_worker(settings, "floor", DEFAULT_CACHE)
    idle = await sample_rss(worker.proc.pid)
    server = bench.server.proc
    assert server is not None
    meter = _CpuMeter(worker=worker.proc.pid, server=server.pid, bench=os.getpid())
    t0, wall0 = time.monotonic(), time.time()
    deadline = t0 + PHASE_SECONDS
    await start_floors(bench.client, FLOOR_WORKFLOW, ids, settings.task_queue)
    started = time.monotonic() - t0
    for fid in [*ids[:: max(1, len(ids) // POLLED)], ids[-1]]:  # in the order they were started
        await first_task_completed_at(bench.client, fid, deadline, POLL_SECONDS)
    used = meter.used()
    done = await bounded(ids, lambda fid: first_task_completed_at(bench.client, fid, deadline), QUERY_CONCURRENCY)
    park_seconds = max(done) - wall0
    held = await sample_rss(worker.proc.pid)
    say(f"parked_10k (floor): {len(ids)} waiting on their signal after {park_seconds:.1f}s, RSS {mib(held)} MiB")
    return {
        "max_cached_workflows": DEFAULT_CACHE,
        "rss_idle_mib": mib(idle),
        "rss_parked_mib": mib(held),
        "per_workflow_kib": round((held - idle) / len(ids) / 1024, 1),
        "seconds_to_start_all": round(started, 1),
        "seconds_to_park_all": round(park_seconds, 1),
        **_cpu_per(len(ids), **used),
    }


class _CpuMeter:
    """The CPU seconds named processes use from its making on."""

    def __init__(self, **pids: int) -> None:
        self._pids = pids
        self._start = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def used(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) - self._start[name] for name, pid in self._pids.items()}


def _cpu_per(count: int, **seconds: float) -> dict[str, float]:
    """CPU seconds per process (worker, server, bench) as milliseconds per conversation."""
    return {f"{process}_cpu_ms_per_conversation": round(used * 1000 / count, 1) for process, used in seconds.items()}


def _what(event: HistoryEvent) -> tuple[str, str] | None:
    """(kind, name) of an event that stands for work: a workflow task, an activity, a local activity
    (its marker, the type in the SDK's JSON), a patch marker, a search attribute upsert, a timer; None
    for the rest."""
    if event.event_type == _COMPLETED:
        return "workflow_tasks", ""
    if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        return "activities", event.activity_task_scheduled_event_attributes.activity_type.name
    if event.event_type in _ALSO_COUNTED:
        return _ALSO_COUNTED[event.event_type], ""
    if event.event_type != EventType.EVENT_TYPE_MARKER_RECORDED:
        return None
    marker = event.marker_recorded_event_attributes
    if marker.marker_name != "core_local_activity":
        return "markers", marker.marker_name  # core_patch: a workflow.patched() branch taken
    data = marker.details.get("data")
    try:
        return "local_activities", str(json.loads(data.payloads[0].data)["activity_type"]) if data else ""
    except (ValueError, KeyError, IndexError):
        return "local_activities", ""


async def _tasks_to_park(bench: Bench, ids: list[str]) -> dict[str, Any]:
    """Over SAMPLED parked workflows, what Temporal did for each to park it (medians): each kind of
    _KINDS, and each activity and marker by name."""
    counts: list[Counter[tuple[str, str]]] = []
    for wid in ids[:: max(1, len(ids) // SAMPLED)][:SAMPLED]:
        events = (await bench.client.get_workflow_handle(wid).fetch_history()).events
        found = Counter(what for what in map(_what, events) if what is not None)
        found["history_events", ""] = len(events)
        counts.append(found)

    def median_of(keys: set[tuple[str, str]]) -> float:
        return float(statistics.median(sum(found[key] for key in keys) for found in counts))

    seen = {key for found in counts for key in found}
    named = {kind: {name: median_of({(k, name)}) for k, name in sorted(seen) if k == kind and name} for kind in _KINDS}
    return {
        "histories": len(counts),
        **{kind: median_of({key for key in seen if key[0] == kind}) for kind in _KINDS},
        "by_name": {kind: names for kind, names in named.items() if names},
    }


async def _floor(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("parked_10k-floor")
    ids = new_ids("p10k-floor", count)
    parked = await _floor_park(bench, settings, ids)
    default = await _queried_after_kill(bench, ids, settings, DEFAULT_CACHE, "floor", _floor_answering)
    bench.stop_workers()
    tasks = await _tasks_to_park(bench, ids)
    return {"workflows": count, "parked": parked, "after_sigkill_default_cache": default, "tasks_to_park": tasks}


def _ratio(ours: float, floor: float) -> float:
    return round(ours / max(floor, 0.1), 2)


async def run(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("parked_10k")
    ids = new_ids("p10k", count)
    meter = _CpuMeter(bench=os.getpid())  # the starts and the scripted model's replies
    parked = await park(bench, settings, ids, DEFAULT_CACHE, timeout=PHASE_SECONDS)
    parked |= _cpu_per(count, **meter.used())
    default = await _queried_after_kill(bench, ids, settings, DEFAULT_CACHE)
    small = await _queried_after_kill(bench, ids, settings, SMALL_CACHE)
    bench.stop_workers()
    for label, phase in (("default cache", default), ("small cache", small)):
        bench.check(f"parked_10k: waiting after SIGKILL, answered ({label})", count, phase["survivors"])
    bench.check("parked_10k: no tool ran before its approval", 0, sum(ran_counts(settings).values()))
    parked["tasks_to_park"] = await _tasks_to_park(bench, ids)
    floor = await _floor(bench, count)
    floor_survivors = floor["after_sigkill_default_cache"]["survivors"]
    bench.check("parked_10k: floor waiting after SIGKILL, answered", count, floor_survivors)
    ratio = {
        "seconds_to_park": _ratio(parked["seconds_to_park_all"], floor["parked"]["seconds_to_park_all"]),
        "seconds_until_every_one_answers": _ratio(
            default["seconds_until_every_one_answers"],
            floor["after_sigkill_default_cache"]["seconds_until_every_one_answers"],
        ),
    }
    say(f"parked_10k: ours / the floor's: {ratio}")
    return {
        "conversations": count,
        "parked_default_cache": parked,
        "after_sigkill_default_cache": default,
        "after_sigkill_small_cache": small,
        "all_survive": default["survivors"] == small["survivors"] == count,
        "floor": floor,
        "floor_all_survive": floor_survivors == count,
        "ratio_to_floor": ratio,
    }
