"""Scenario 3: SIGKILL the worker with 1,000 approvals waiting, start two new ones, approve them all.

Once with the projection and ledger on SQLite, once on PostgreSQL. The SQLite run reuses the
conversations the parked scenario left waiting (their last worker was SIGKILLed), or parks its own.
Correctness is proven by counts outside the workflow: lines the approved shell command appended (one
per conversation), the scripted model's request log (two per conversation: the tool call and the
answer), and the execution ledger.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import script
from bench.drive import approve, bounded, new_ids, pending_requests, scalar, wait_idle
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.sc_parked import park
from storage.store import ProjectionStore

BACKENDS = ("sqlite", "postgresql")
WORKERS = 2  # the new workers that take over after the SIGKILL


async def _progress(db: Any, count: int, stop: asyncio.Event, label: str) -> None:
    while not stop.is_set():
        await asyncio.sleep(5)
        idle = scalar(db, "SELECT count(*) FROM ui_conversations WHERE turn_status = 'idle'")
        say(f"{label}: {idle}/{count} turns complete")


async def run(bench: Bench, count: int) -> dict[str, Any]:
    """The same recovery with the projection and ledger on SQLite, then on PostgreSQL."""
    backends = {backend: await recover(bench, count, backend) for backend in BACKENDS}
    return {"approvals": count, "workers": WORKERS, "backends": backends}


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
    t0 = time.monotonic()
    stop = asyncio.Event()
    reporter = asyncio.create_task(_progress(settings.approvals_db, count, stop, label))
    store = ProjectionStore(settings.approvals_db)  # one open store, as a running UI holds it
    await bounded([requests[cid] for cid in ids], lambda rid: approve(bench.client, settings, rid, store), 50)
    await store.close()
    sent_seconds = time.monotonic() - t0
    await wait_idle(settings.approvals_db, count, timeout=900)
    total = time.monotonic() - t0
    stop.set()
    await reporter
    bench.stop_workers()
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
    }
