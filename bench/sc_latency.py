"""Scenario 1: approval latency, ours next to the floor, measured the same way in one run.

Latency = from the moment the decision is sent (before `send_decision`, which claims the request
in the projection and signals) to the moment the approved tool's result is recorded in history
(its ActivityTaskCompleted event). Ours and the floor alternate one approval at a time, so both
see the same machine noise, and each waits for the previous one to finish so none overlap.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import script
from bench.drive import activity_completed_at, approve, new_ids, pending_requests, scalar, start_all, wait_pending
from bench.floor import FLOOR_ACTIVITY, FLOOR_SIGNAL, FLOOR_WORKFLOW
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import median, percentile, summary_ms
from workflows.activity_calls import EXECUTE_TOOL

BLOCKS = 4


async def run(bench: Bench, count: int, payload_threshold: int | None = None) -> dict[str, Any]:
    """payload_threshold=0 puts every payload of ours in the payload store (the floor keeps its own inline)."""
    label = "latency" if payload_threshold is None else f"latency_extstore(threshold={payload_threshold})"
    ours_settings, floor_settings = bench.settings("latency", payload_threshold), bench.settings("floor")
    bench.start_worker(ours_settings, "ours", DEFAULT_CACHE)
    bench.start_worker(floor_settings, "floor", DEFAULT_CACHE)
    ours_ids, floor_ids = new_ids("lat", count), new_ids("floor", count)
    say(f"latency: starting {count} conversations and {count} floor workflows")
    await start_all(bench.client, ours_settings, ours_ids)
    for fid in floor_ids:
        await bench.client.start_workflow(
            FLOOR_WORKFLOW, script.shell_command(fid), id=fid, task_queue=floor_settings.task_queue
        )
    await wait_pending(ours_settings.approvals_db, count)
    requests = pending_requests(ours_settings.approvals_db)
    sent: dict[str, float] = {}
    idle_sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
    for i, (cid, fid) in enumerate(zip(ours_ids, floor_ids, strict=True)):
        sent[cid] = time.time()
        await approve(bench.client, ours_settings, requests[cid])
        while scalar(ours_settings.approvals_db, idle_sql, cid) != "idle":
            await asyncio.sleep(0.002)
        handle = bench.client.get_workflow_handle(fid)
        sent[fid] = time.time()
        await handle.signal(FLOOR_SIGNAL)
        await handle.result()
        if (i + 1) % 50 == 0:
            say(f"latency: {i + 1}/{count} approvals each")
    ours = await _latencies(bench, ours_ids, sent, EXECUTE_TOOL)
    floor = await _latencies(bench, floor_ids, sent, FLOOR_ACTIVITY)
    bench.stop_workers()
    ran = ran_counts(ours_settings) | ran_counts(floor_settings)
    bench.check(f"{label}: approved tools ran once each", 2 * count, sum(1 for n in ran.values() if n == 1))
    ours_summary, floor_summary = summary_ms(ours), summary_ms(floor)
    ratio = {k: round(ours_summary[k] / floor_summary[k], 2) for k in ("p50_ms", "p90_ms", "p99_ms")}
    blocks = block_ratios(ours, floor)
    say(f"{label}: ours p50 {ours_summary['p50_ms']} ms, floor p50 {floor_summary['p50_ms']} ms, ratio {ratio}")
    return {
        "ours": ours_summary,
        "floor": floor_summary,
        "ratio": ratio,
        "p50_ratio_per_block": blocks,
        "p50_ratio_median_of_blocks": round(median(blocks), 2),
        "approvals": count,
        "payload_store_threshold": ours_settings.payload_store_threshold,
    }


def block_ratios(ours: list[float], floor: list[float], blocks: int = BLOCKS) -> list[float]:
    """The p50 ratio within consecutive blocks of approvals: how much the ratio moves with the noise."""
    size = max(1, len(ours) // blocks)
    return [
        round(percentile(ours[i : i + size], 50) / percentile(floor[i : i + size], 50), 2)
        for i in range(0, size * blocks, size)
        if ours[i : i + size]
    ]


async def _latencies(bench: Bench, ids: list[str], sent: dict[str, float], activity: str) -> list[float]:
    out = []
    for wid in ids:
        history = await bench.client.get_workflow_handle(wid).fetch_history()
        [done] = activity_completed_at(history, activity)
        out.append(done - sent[wid])
    return out
