"""Scenario: ten thousand conversations waiting for approval on one worker, and a SIGKILL.

One worker with the default workflow cache parks every conversation (each waits for a person);
its RSS and the seconds to park them all are taken. It is SIGKILLed; a new worker with the default
cache answers a get_state query from every conversation (each replayed), then is SIGKILLed in turn
and a worker with a small cache does the same. Every one must still be waiting. Bounded: each
phase has a deadline (PHASE_SECONDS) and fails the scenario when it passes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.drive import new_ids
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.sc_parked import SMALL_CACHE, count_waiting, park, sample_rss
from bench.stats import mib

PHASE_SECONDS = 3600.0


async def _queried_after_kill(bench: Bench, ids: list[str], settings: Any, cache: int) -> dict[str, Any]:
    bench.stop_workers()  # SIGKILL: no graceful shutdown
    worker = bench.start_worker(settings, "ours", cache)
    idle = await sample_rss(worker.proc.pid)
    t0 = time.monotonic()
    survivors = await asyncio.wait_for(count_waiting(bench, ids, concurrency=16), PHASE_SECONDS)
    seconds = time.monotonic() - t0
    held = await sample_rss(worker.proc.pid)
    say(f"parked_10k: cache {cache}: {survivors}/{len(ids)} answered after SIGKILL in {seconds:.1f}s, RSS {mib(held)}")
    return {
        "max_cached_workflows": cache,
        "rss_idle_mib": mib(idle),
        "rss_after_queries_mib": mib(held),
        "seconds_until_every_one_answers": round(seconds, 1),
        "survivors": survivors,
    }


async def run(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("parked_10k")
    ids = new_ids("p10k", count)
    parked = await park(bench, settings, ids, DEFAULT_CACHE, timeout=PHASE_SECONDS)
    default = await _queried_after_kill(bench, ids, settings, DEFAULT_CACHE)
    small = await _queried_after_kill(bench, ids, settings, SMALL_CACHE)
    bench.stop_workers()
    for label, phase in (("default cache", default), ("small cache", small)):
        bench.check(f"parked_10k: waiting after SIGKILL, answered ({label})", count, phase["survivors"])
    bench.check("parked_10k: no tool ran before its approval", 0, sum(ran_counts(settings).values()))
    return {
        "conversations": count,
        "parked_default_cache": parked,
        "after_sigkill_default_cache": default,
        "after_sigkill_small_cache": small,
        "all_survive": default["survivors"] == small["survivors"] == count,
    }
