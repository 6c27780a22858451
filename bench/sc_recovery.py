"""Scenario 3: SIGKILL the worker with 1,000 approvals waiting, start a new one, approve them all.

Reuses the conversations the parked scenario left waiting (their last worker was SIGKILLed), or
parks its own. Correctness is proven by counts outside the workflow: lines the approved shell
command appended (one per conversation), the scripted model's request log (two per conversation:
the tool call and the answer), and the execution ledger.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import script
from bench.drive import approve, bounded, new_ids, pending_requests, scalar, wait_idle
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.sc_parked import park


async def _progress(db: Any, count: int, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(5)
        idle = scalar(db, "SELECT count(*) FROM ui_conversations WHERE turn_status = 'idle'")
        say(f"recovery: {idle}/{count} turns complete")


async def run(bench: Bench, count: int) -> dict[str, Any]:
    handed = bench.shared.pop("parked", None)
    if handed is not None and len(handed[1]) == count:
        settings, ids = handed
        say(f"recovery: taking over the {count} conversations the parked scenario left waiting")
    else:
        settings, ids = bench.settings("recovery"), new_ids("rec", count)
        await park(bench, settings, ids, DEFAULT_CACHE)
        bench.stop_workers()  # SIGKILL with every approval waiting
    requests = pending_requests(settings.approvals_db)
    t_restart = time.monotonic()
    bench.start_worker(settings, "ours", DEFAULT_CACHE)
    t0 = time.monotonic()
    stop = asyncio.Event()
    reporter = asyncio.create_task(_progress(settings.approvals_db, count, stop))
    await bounded([requests[cid] for cid in ids], lambda rid: approve(bench.client, settings, rid), 50)
    sent_seconds = time.monotonic() - t0
    await wait_idle(settings.approvals_db, count, timeout=900)
    total = time.monotonic() - t0
    stop.set()
    await reporter
    bench.stop_workers()
    ran = ran_counts(settings)
    asked = script.requests_per_tag(bench.model)
    finished = scalar(settings.ledger_db, "SELECT count(*) FROM tool_executions WHERE state = 'finished'")
    bench.check("recovery: every approved tool ran exactly once", count, sum(1 for cid in ids if ran.get(cid) == 1))
    bench.check("recovery: no tool ran more than once", 0, sum(1 for n in ran.values() if n > 1))
    bench.check("recovery: model asked exactly twice per conversation", count, sum(asked[c] == 2 for c in ids))
    bench.check("recovery: ledger shows each tool finished", count, finished)
    say(f"recovery: {count} approvals complete in {total:.1f}s ({count / total:.1f}/s)")
    return {
        "approvals": count,
        "worker_start_seconds": round(t0 - t_restart, 1),
        "seconds_to_send_all_decisions": round(sent_seconds, 1),
        "seconds_until_every_turn_complete": round(total, 1),
        "approvals_per_second": round(count / total, 1),
        "tools_run": sum(ran.get(cid, 0) for cid in ids),
        "model_requests": sum(asked[c] for c in ids),
        "assistant_messages": 2 * count,
    }
