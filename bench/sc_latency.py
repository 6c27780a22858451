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
from bench.drive import approval_latencies, approve, new_ids, pending_requests, scalar, start_all, wait_pending
from bench.floor import FLOOR_ACTIVITY, FLOOR_SIGNAL, FLOOR_WORKFLOW
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import median, percentile, summary_ms
from workflows.activity_calls import EXECUTE_TOOL

BLOCKS = 4


async def run(bench: Bench, count: int, stored_threshold: int | None = None) -> dict[str, Any]:
    """With stored_threshold, a third group runs interleaved with the other two: ours with
    PAYLOAD_STORE_THRESHOLD=stored_threshold (0: every payload of the conversation is stored)."""
    label = "latency" if stored_threshold is None else f"latency_extstore(threshold={stored_threshold})"
    ours_settings, floor_settings = bench.settings("latency"), bench.settings("floor")
    stored_settings = None if stored_threshold is None else bench.settings("stored", stored_threshold)
    groups = [ours_settings] + ([] if stored_settings is None else [stored_settings])
    for settings in groups:
        bench.start_worker(settings, "ours", DEFAULT_CACHE)
    bench.start_worker(floor_settings, "floor", DEFAULT_CACHE)
    ids = [new_ids(f"lat{n}", count) for n in range(len(groups))]
    floor_ids = new_ids("floor", count)
    say(f"{label}: starting {count} conversations per group and {count} floor workflows")
    for settings, group_ids in zip(groups, ids, strict=True):
        await start_all(bench.client, settings, group_ids)
    for fid in floor_ids:
        await bench.client.start_workflow(
            FLOOR_WORKFLOW, script.shell_command(fid), id=fid, task_queue=floor_settings.task_queue
        )
    requests: dict[str, str] = {}
    for settings in groups:
        await wait_pending(settings.approvals_db, count)
        requests |= pending_requests(settings.approvals_db)
    sent: dict[str, float] = {}
    idle_sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
    for i in range(count):
        for settings, group_ids in zip(groups, ids, strict=True):
            cid = group_ids[i]
            sent[cid] = time.time()
            await approve(bench.client, settings, requests[cid])
            while scalar(settings.approvals_db, idle_sql, cid) != "idle":
                await asyncio.sleep(0.002)
        handle = bench.client.get_workflow_handle(floor_ids[i])
        sent[floor_ids[i]] = time.time()
        await handle.signal(FLOOR_SIGNAL)
        await handle.result()
        if (i + 1) % 50 == 0:
            say(f"{label}: {i + 1}/{count} approvals each")
    measured = [await approval_latencies(bench.client, group_ids, sent, EXECUTE_TOOL) for group_ids in ids]
    floor = await approval_latencies(bench.client, floor_ids, sent, FLOOR_ACTIVITY)
    bench.stop_workers()
    ran: dict[str, int] = ran_counts(floor_settings)
    for settings in groups:
        ran |= ran_counts(settings)
    runs = (len(groups) + 1) * count
    bench.check(f"{label}: approved tools ran once each", runs, sum(1 for n in ran.values() if n == 1))
    result = _compare(measured[0], floor)
    say(f"{label}: ours p50 {result['ours']['p50_ms']} ms, floor p50 {result['floor']['p50_ms']} ms")
    if len(measured) > 1:
        stored = _compare(measured[1], floor)
        result["ours_stored"], result["ratio_stored"] = stored["ours"], stored["ratio"]
        result["p50_ratio_stored_per_block"] = stored["p50_ratio_per_block"]
        result["stored_over_inline_p50_per_block"] = block_ratios(measured[1], measured[0])
        result["payload_store_threshold"] = stored_threshold
        say(f"{label}: every payload stored p50 {stored['ours']['p50_ms']} ms, ratio {stored['ratio']}")
    return result | {"approvals": count}


def _compare(ours: list[float], floor: list[float]) -> dict[str, Any]:
    ours_summary, floor_summary = summary_ms(ours), summary_ms(floor)
    blocks = block_ratios(ours, floor)
    return {
        "ours": ours_summary,
        "floor": floor_summary,
        "ratio": {k: round(ours_summary[k] / floor_summary[k], 2) for k in ("p50_ms", "p90_ms", "p99_ms")},
        "p50_ratio_per_block": blocks,
        "p50_ratio_median_of_blocks": round(median(blocks), 2),
    }


def block_ratios(ours: list[float], floor: list[float], blocks: int = BLOCKS) -> list[float]:
    """The p50 ratio within consecutive blocks of approvals: how much the ratio moves with the noise."""
    size = max(1, len(ours) // blocks)
    return [
        round(percentile(ours[i : i + size], 50) / percentile(floor[i : i + size], 50), 2)
        for i in range(0, size * blocks, size)
        if ours[i : i + size]
    ]
