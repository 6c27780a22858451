"""Scenario 1: approval latency, ours next to the floor, measured the same way in one run.

Latency = from the moment the decision is sent (before `send_decision`, which claims the request
in the projection and signals) to the moment the approved tool's result is recorded in history
(its ActivityTaskCompleted event). Ours and the floor alternate one approval at a time, so both
see the same machine noise, and each waits for the previous one to finish so none overlap. The
bench itself stays quiet while an approval is timed (QUIET_SECONDS). The floor runs the same
command in the same sandbox, so the ratio is our bookkeeping; what the sandbox itself costs is
measured apart, in the same run.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

from activities.sandbox import describe as sandbox_launcher
from bench import phases, sandbox_cost, script
from bench.drive import approval_latencies, approve, new_ids, pending_requests, settle, start_all, wait_pending
from bench.floor import FLOOR_ACTIVITY, FLOOR_SIGNAL, FLOOR_UPDATE, FLOOR_WORKFLOW
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import median, percentile, summary_ms
from config.settings import Settings
from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput
from core.refusals import ClaimedDecision
from storage.store import ProjectionStore
from workflows.activity_calls import EXECUTE_TOOL

BLOCKS = 4
# After sending ours its decision the bench reads the read model until the turn ends. It starts
# only this long after, past the approval's span (p99 well under it): reads every few ms from the
# bench's process would take CPU from the worker and the server while the approval is timed,
# which the floor, awaited by a long poll, is spared.
QUIET_SECONDS = 0.1


async def run(bench: Bench, count: int, stored_threshold: int | None = None) -> dict[str, Any]:
    """Ours with the projection on SQLite and on PostgreSQL, the baseline revision's worker when the
    run has one ("before"), and the floor, one approval each in turn. With stored_threshold, the
    groups are ours and ours with PAYLOAD_STORE_THRESHOLD=stored_threshold (0: every payload stored)."""
    label = "latency" if stored_threshold is None else f"latency_extstore(threshold={stored_threshold})"
    groups: dict[str, tuple[Settings, Path | None]] = {"ours": (bench.settings("latency"), None)}
    # Workspace saves are on wherever PAYLOAD_STORE is set (the bench's workers have one): ours is
    # timed without them, and "ours_saves" with them, each tool's workspace saved before its result.
    saves = {name: "off" for name in ("ours", "ours_postgres", "ours_stored")} | {"ours_saves": "on"}
    if stored_threshold is not None:
        groups["ours_stored"] = (bench.settings("stored", stored_threshold), None)
    else:
        groups["ours_postgres"] = (bench.settings("latency-pg", backend="postgresql"), None)
        groups["ours_saves"] = (bench.settings("latency-saves"), None)
        if bench.baseline is not None:
            groups["before"] = (bench.settings("latency-before"), bench.baseline)
    floor_settings = bench.settings("floor")
    for name, (settings, checkout) in groups.items():
        env = {"WORKSPACE_SAVES": saves[name]} if name in saves else None
        bench.start_worker(settings, "ours", DEFAULT_CACHE, checkout, env)
    bench.start_worker(floor_settings, "floor", DEFAULT_CACHE)
    ids = {name: new_ids(f"lat-{name.replace('_', '-')}", count) for name in groups}
    floor_ids = new_ids("floor", count)
    # Ours gets each decision by update (doors/decision_delivery.py): the floor is measured both ways.
    update_floor_ids = new_ids("floor-update", count)
    say(f"{label}: starting {count} conversations for each of {', '.join(groups)} and {count} floor workflows")
    for name, (settings, _) in groups.items():
        await start_all(bench.client, settings, ids[name])
    for fid in floor_ids + update_floor_ids:
        await bench.client.start_workflow(
            FLOOR_WORKFLOW, script.shell_command(fid), id=fid, task_queue=floor_settings.task_queue
        )
    requests: dict[str, str] = {}
    for settings, _ in groups.values():
        await wait_pending(settings.approvals_db, count)
        requests |= pending_requests(settings.approvals_db)
    # One open store per projection, as a running UI holds it.
    stores = {name: ProjectionStore(settings.approvals_db) for name, (settings, _) in groups.items()}
    claims = {name: timed_claims(store) for name, store in stores.items()}
    sent: dict[str, float] = {}
    for i in range(count):
        for name, (settings, _) in groups.items():
            cid = ids[name][i]
            await settle()
            sent[cid] = time.time()
            await approve(bench.client, settings, requests[cid], stores[name])
            await asyncio.sleep(QUIET_SECONDS)
            while ((await stores[name].conversation(cid)) or {}).get("turn_status") != "idle":
                await asyncio.sleep(0.002)
        handle = bench.client.get_workflow_handle(floor_ids[i])
        await settle()
        sent[floor_ids[i]] = time.time()
        await handle.signal(FLOOR_SIGNAL)
        await handle.result()
        handle = bench.client.get_workflow_handle(update_floor_ids[i])
        await settle()
        sent[update_floor_ids[i]] = time.time()
        await handle.execute_update(FLOOR_UPDATE)
        await handle.result()
        if (i + 1) % 50 == 0:
            say(f"{label}: {i + 1}/{count} approvals each")
    for store in stores.values():
        await store.close()
    measured = {name: await approval_latencies(bench.client, ids[name], sent, EXECUTE_TOOL) for name in groups}
    floor = await approval_latencies(bench.client, floor_ids, sent, FLOOR_ACTIVITY)
    update_floor = await approval_latencies(bench.client, update_floor_ids, sent, FLOOR_ACTIVITY)
    split = {
        name: await phases.medians(bench.client, ids[name], sent, EXECUTE_TOOL, SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE)
        for name in groups
    }
    split["floor"] = await phases.medians(bench.client, floor_ids, sent, FLOOR_ACTIVITY, FLOOR_SIGNAL)
    split["floor_update"] = await phases.medians(
        bench.client, update_floor_ids, sent, FLOOR_ACTIVITY, FLOOR_SIGNAL, FLOOR_UPDATE
    )
    bench.stop_workers()
    ran: dict[str, int] = ran_counts(floor_settings)
    for settings, _ in groups.values():
        ran |= ran_counts(settings)
    runs = (len(groups) + 2) * count
    bench.check(f"{label}: approved tools ran once each", runs, sum(1 for n in ran.values() if n == 1))
    result = compare(measured["ours"], floor)
    result["quiet_ms"] = round(QUIET_SECONDS * 1000)
    say(f"{label}: ours p50 {result['ours']['p50_ms']} ms, floor p50 {result['floor']['p50_ms']} ms")
    for name in groups:
        if name == "ours":
            continue
        other = compare(measured[name], floor)
        suffix = name.removeprefix("ours_")
        result[name], result[f"ratio_{suffix}"] = other["ours"], other["ratio"]
        result[f"p50_ratio_{suffix}_per_block"] = other["p50_ratio_per_block"]
        say(f"{label}: {name} p50 {other['ours']['p50_ms']} ms, ratio {other['ratio']}")
    for name in groups:
        by_update = compare(measured[name], update_floor)
        suffix = "" if name == "ours" else "_" + name.removeprefix("ours_")
        result[f"ratio{suffix}_to_update_floor"] = by_update["ratio"]
        if name == "ours":
            result["floor_update"] = by_update["floor"]
    say(f"{label}: floor by update p50 {result['floor_update']['p50_ms']} ms")
    if "ours_stored" in groups:
        result["stored_over_inline_p50_per_block"] = block_ratios(measured["ours_stored"], measured["ours"])
        result["payload_store_threshold"] = stored_threshold
    for name, took in claims.items():
        split[name]["claim"] = round(percentile(took, 50) * 1000, 2)
    result["phases_p50_ms"] = split
    say(f"{label}: phases (p50 ms): {split}")
    if stored_threshold is None:
        result["sandbox"] = await sandbox_apart(floor_settings, count)
        say(f"{label}: the sandbox alone: {result['sandbox']}")
    return result | {"approvals": count}


def timed_claims(store: ProjectionStore) -> list[float]:
    """The seconds each claim of this store takes (part of the first phase, before the signal)."""
    took: list[float] = []
    claim = store.claim_decision

    async def timed(decision: DecisionInput) -> ClaimedDecision:
        t0 = time.perf_counter()
        try:
            return await claim(decision)
        finally:
            took.append(time.perf_counter() - t0)

    store.claim_decision = timed  # type: ignore[method-assign]
    return took


async def sandbox_apart(settings: Settings, count: int) -> dict[str, Any]:
    """What the sandbox adds to the approved command, measured apart from both (same function, same
    policy as the workers use, and without it), interleaved in the bench process."""
    policy = settings.sandbox_policy()
    variants = {"sandboxed": policy, "unsandboxed": dataclasses.replace(policy, enabled=False)}
    times = await sandbox_cost.measure(count, settings.workspace_dir, variants, script.shell_command("sandbox"))
    return {**times, "launcher": sandbox_launcher(policy)}


def compare(ours: list[float], floor: list[float]) -> dict[str, Any]:
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
