"""Scenario 2: 1,000 conversations waiting for approval at once, and what a restart leaves.

Memory is the RSS (psutil) of the one process that holds the waiting conversations. Ours: a
worker with the SDK's default workflow cache parks all 1,000; it is SIGKILLed; a new worker with
a small cache answers a get_state query from every conversation (each one replayed through the
small cache), which both counts the survivors and shows memory that stays flat. The pinning
design parks the same 1,000 in one process, is SIGKILLed and started again, and counts.
The waiting conversations are then handed to the recovery scenario.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

import psutil

from bench.drive import bounded, new_ids, start_all, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import median, mib
from config.settings import Settings
from core.contract import QUERY_GET_STATE
from core.conversation_model import ConversationState
from tests.support.processes import REPO_ROOT

SMALL_CACHE = 10
SETTLE_SECONDS = 3.0
RSS_SAMPLES = 5


async def sample_rss(pid: int) -> int:
    """The median of a few readings, after the process has settled."""
    await asyncio.sleep(SETTLE_SECONDS)
    readings = []
    for _ in range(RSS_SAMPLES):
        readings.append(psutil.Process(pid).memory_info().rss)
        await asyncio.sleep(0.4)
    return int(median(readings))


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def _memory(idle: int, held: int, count: int) -> dict[str, float]:
    return {
        "rss_idle_mib": mib(idle),
        "rss_parked_mib": mib(held),
        "per_conversation_kib": round((held - idle) / count / 1024, 1),
    }


async def park(bench: Bench, settings: Settings, ids: list[str], cache: int, timeout: float = 600.0) -> dict[str, Any]:
    """Start the conversations on a fresh worker and wait until each waits for a person."""
    worker = bench.start_worker(settings, "ours", cache)
    idle = await sample_rss(worker.proc.pid)
    cpu0, server_cpu0, t0 = cpu_seconds(worker.proc.pid), _server_cpu(bench), time.monotonic()
    await start_all(bench.client, settings, ids)
    await wait_pending(settings.approvals_db, len(ids), timeout)
    park_seconds = time.monotonic() - t0
    worker_cpu, server_cpu = cpu_seconds(worker.proc.pid) - cpu0, _server_cpu(bench) - server_cpu0
    held = await sample_rss(worker.proc.pid)
    say(f"parked: {len(ids)} waiting after {park_seconds:.1f}s (cache {cache}), worker RSS {mib(held)} MiB")
    return {
        "max_cached_workflows": cache,
        **_memory(idle, held, len(ids)),
        "seconds_to_park_all": round(park_seconds, 1),
        "worker_cpu_ms_per_conversation": round(worker_cpu * 1000 / len(ids), 1),
        "server_cpu_ms_per_conversation": round(server_cpu * 1000 / len(ids), 1),
    }


def _server_cpu(bench: Bench) -> float:
    assert bench.server.proc is not None
    return cpu_seconds(bench.server.proc.pid)


async def count_waiting(bench: Bench, ids: list[str], concurrency: int = 8) -> int:
    """Ask every conversation for its state; a new worker must replay each to answer."""

    async def waiting(cid: str) -> bool:
        handle = bench.client.get_workflow_handle(cid)
        state = await handle.query(QUERY_GET_STATE, result_type=ConversationState, rpc_timeout=timedelta(seconds=60))
        return state.turn_status == "awaiting_approval" and len(state.pending_approvals) == 1

    return sum(await bounded(ids, waiting, concurrency))


async def _ours(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("parked")
    ids = new_ids("park", count)
    default = await park(bench, settings, ids, DEFAULT_CACHE)
    bench.stop_workers()  # SIGKILL: no graceful shutdown
    small_worker = bench.start_worker(settings, "ours", SMALL_CACHE)
    small_idle = await sample_rss(small_worker.proc.pid)
    t0 = time.monotonic()
    survivors = await count_waiting(bench, ids)
    query_seconds = time.monotonic() - t0
    small_held = await sample_rss(small_worker.proc.pid)
    bench.stop_workers()
    bench.check("parked: waiting after SIGKILL, answered by a new worker", count, survivors)
    bench.check("parked: no tool ran before its approval", 0, sum(ran_counts(settings).values()))
    say(f"parked: {survivors}/{count} still waiting after restart; all replayed in {query_seconds:.1f}s")
    bench.shared["parked"] = (settings, ids)
    small = {
        "max_cached_workflows": SMALL_CACHE,
        **_memory(small_idle, small_held, count),
        "seconds_to_query_all_after_restart": round(query_seconds, 1),
        "measured": "new worker after SIGKILL, after a get_state query replayed each conversation",
    }
    return {"ours_default_cache": default, "ours_small_cache": small, "ours_survive_restart": survivors}


class PinnedProcess:
    def __init__(self, model_url: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.pinned", "--model-url", model_url],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.ask(None, "ready")

    def ask(self, command: str | None, expect: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if command is not None:
            self.proc.stdin.write(f"{command}\n".encode())
            self.proc.stdin.flush()
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith(expect):
            raise RuntimeError(f"pinned process answered {line!r} to {command!r}")
        return line

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


async def _pinned(bench: Bench, count: int) -> dict[str, Any]:
    pinned = PinnedProcess(bench.model.base_url)
    idle = await sample_rss(pinned.proc.pid)
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(asyncio.to_thread(pinned.ask, f"park {count}", "parked"), timeout=600)
    except BaseException:
        pinned.kill()  # also ends the readline the thread is blocked in
        raise
    park_seconds = time.monotonic() - t0
    held = await sample_rss(pinned.proc.pid)
    say(f"parked (pinned): {count} waiting after {park_seconds:.1f}s, RSS {mib(held)} MiB")
    pinned.kill()
    again = PinnedProcess(bench.model.base_url)
    survivors = int(again.ask("count", "holding").split()[1])
    again.kill()
    say(f"parked (pinned): {survivors}/{count} still waiting after restart")
    return {**_memory(idle, held, count), "seconds_to_park_all": round(park_seconds, 1), "survive_restart": survivors}


async def run(bench: Bench, count: int) -> dict[str, Any]:
    return {"conversations": count, **await _ours(bench, count), "pinned": await _pinned(bench, count)}
