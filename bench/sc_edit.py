"""Scenario: what an edit costs next to a plain approval, measured the same way in one run.

Latency = from the moment the decision is sent to the moment the approved tool's result is in
history (its ActivityTaskCompleted event). A plain approval and an edit are both claimed and
sent by the `decide` update; for an edit the workflow's validator first checks the edited call
(schema, deny and approver rules) before it answers. The two alternate one at a time, on one worker.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from bench.drive import approval_latencies, approve, new_ids, pending_requests, scalar, start_all, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import summary_ms
from core.conversation_model import DecisionInput
from doors.control import send_decision
from workflows.activity_calls import EXECUTE_TOOL


async def run(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("edit")
    bench.start_worker(settings, "ours", DEFAULT_CACHE)
    plain, edited = new_ids("plain", count), new_ids("edited", count)
    await start_all(bench.client, settings, plain + edited)
    await wait_pending(settings.approvals_db, 2 * count)
    requests = pending_requests(settings.approvals_db)
    sent: dict[str, float] = {}
    idle_sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
    args_sql = "SELECT details_json FROM ui_pending_approvals WHERE request_id = ?"
    for i in range(count):
        for cid in (plain[i], edited[i]):
            request_id = requests[cid]
            if cid in edited:
                arguments = json.loads(scalar(settings.approvals_db, args_sql, request_id))["arguments"]
                changed = {**arguments, "command": arguments["command"] + " # edited"}
                sent[cid] = time.time()
                edit = DecisionInput(request_id=request_id, decision="edit", decided_by="bench", arguments=changed)
                await send_decision(bench.client, settings, edit)
            else:
                sent[cid] = time.time()
                await approve(bench.client, settings, request_id)
            while scalar(settings.approvals_db, idle_sql, cid) != "idle":
                await asyncio.sleep(0.002)
    plain_s = await approval_latencies(bench.client, plain, sent, EXECUTE_TOOL)
    edited_s = await approval_latencies(bench.client, edited, sent, EXECUTE_TOOL)
    bench.stop_workers()
    ran = ran_counts(settings)
    bench.check("edit: every approved or edited tool ran once", 2 * count, sum(1 for n in ran.values() if n == 1))
    ours, theirs = summary_ms(plain_s), summary_ms(edited_s)
    say(f"edit: plain p50 {ours['p50_ms']} ms, edited p50 {theirs['p50_ms']} ms")
    ratio = round(theirs["p50_ms"] / ours["p50_ms"], 2)
    return {"plain": ours, "edited": theirs, "ratio_p50": ratio, "approvals": count}
