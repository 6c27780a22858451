"""Scenario: an approval request's latency to its caller, by child workflow and by Nexus, next to
the floor, in one run.

Latency = from the moment the decision is sent (before `send_decision`, as the CLI sends it) to
the moment the caller, resumed, has recorded the result of the floor's activity (its
ActivityTaskCompleted event). Three callers take turns one approval at a time, each finished
before the next is decided: a workflow that asks through `request_approval` (an `ApprovalRequest`
child on our worker), one in a second namespace that asks through the `approvals` Nexus endpoint,
and the floor (a signal, then the same activity). The ratio to the floor is what asking costs. A
fourth caller asks a bare child that waits on one signal (bench/floor.py): what Temporal's child
path costs by itself, so `ratio_child_to_bare` is what our request adds to it.
Beside the totals, `phases` gives each step's median time after the decision (the request's
workflow task and close, the caller hearing of it, its task, the activity), read from the
histories (bench/request_phases.py), for the four side by side.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench import script
from bench.drive import approval_latencies, approve, new_ids, settle, wait_pending
from bench.floor import FLOOR_ACTIVITY, FLOOR_SIGNAL, FLOOR_WORKFLOW
from bench.harness import Bench, ran_counts, say
from bench.request_callers import CALLER_WORKFLOW, REQUEST_KEY, CallerJob, Via, bare_request_id
from bench.request_phases import median_steps, steps_after
from bench.sc_latency import compare
from bench.stats import summary_ms
from doors.nexus_endpoint import ensure_endpoint
from durable_approvals import derived_request_id
from durable_approvals.nexus_caller import nexus_request_id
from storage.store import ProjectionStore
from tests.agents.nexus_support import client_on, register_namespace

CALLERS: tuple[Via, ...] = ("child", "nexus", "bare")


async def run(bench: Bench, count: int) -> dict[str, Any]:
    ours, floor_settings = bench.settings("requests"), bench.settings("requests-floor")
    namespace = await register_namespace(bench.client, "bench-callers")
    endpoint = f"approvals-{uuid.uuid4().hex[:8]}"
    await ensure_endpoint(bench.client, bench.client.namespace, ours.task_queue, endpoint)
    callers = {
        "child": bench.settings("requests-child"),
        "nexus": dataclasses.replace(bench.settings("requests-nexus"), namespace=namespace),
    }
    clients = {"child": bench.client, "nexus": client_on(bench.client, namespace, bench.client.data_converter)}
    bench.start_worker(ours, "ours")
    bench.start_worker(floor_settings, "floor")
    for settings in callers.values():
        bench.start_worker(settings, "callers")
    # A bare child's caller runs beside the child callers; the bare child itself on the floor's worker.
    callers["bare"], clients["bare"] = callers["child"], bench.client

    ids = {via: new_ids(f"req-{via}", count) for via in CALLERS}
    floor_ids = new_ids("req-floor", count)
    requests = {wid: derived_request_id(wid, REQUEST_KEY) for wid in ids["child"]}
    requests |= {wid: nexus_request_id(namespace, wid, REQUEST_KEY) for wid in ids["nexus"]}
    requests |= {wid: bare_request_id(wid) for wid in ids["bare"]}
    say(f"request_latency: starting {count} callers each by child, by Nexus, by a bare child, and {count} floors")
    for via in CALLERS:
        asked = floor_settings.task_queue if via == "bare" else ours.task_queue
        for wid in ids[via]:
            job = CallerJob(via=via, command=script.shell_command(wid), approvals_queue=asked, endpoint=endpoint)
            await clients[via].start_workflow(CALLER_WORKFLOW, job, id=wid, task_queue=callers[via].task_queue)
    for fid in floor_ids:
        await bench.client.start_workflow(
            FLOOR_WORKFLOW, script.shell_command(fid), id=fid, task_queue=floor_settings.task_queue
        )
    await wait_pending(ours.approvals_db, sum(len(ids[via]) for via in CALLERS if via != "bare"))

    store = ProjectionStore(ours.approvals_db)  # one open store, as a running UI holds it
    sent: dict[str, float] = {}
    try:
        for i in range(count):
            for via in CALLERS:
                wid = ids[via][i]
                await settle()
                sent[wid] = time.time()
                if via == "bare":
                    await bench.client.get_workflow_handle(requests[wid]).signal(FLOOR_SIGNAL)
                else:
                    await approve(bench.client, ours, requests[wid], store)
                await clients[via].get_workflow_handle(wid).result()
            floor = bench.client.get_workflow_handle(floor_ids[i])
            await settle()
            sent[floor_ids[i]] = time.time()
            await floor.signal(FLOOR_SIGNAL)
            await floor.result()
            if (i + 1) % 50 == 0:
                say(f"request_latency: {i + 1}/{count} approvals each")
    finally:
        await store.close()
    measured = {via: await approval_latencies(clients[via], ids[via], sent, FLOOR_ACTIVITY) for via in CALLERS}
    floor_times = await approval_latencies(bench.client, floor_ids, sent, FLOOR_ACTIVITY)
    sent_by = {via: [sent[wid] for wid in ids[via]] for via in CALLERS}
    closed = {via: await closed_after(bench, [requests[wid] for wid in ids[via]], sent_by[via]) for via in CALLERS}
    heard = {via: await heard_after(clients[via], ids[via], sent_by[via]) for via in CALLERS}
    phases: dict[str, dict[str, float]] = {
        via: await phases_of(bench.client, clients[via], ids[via], requests, sent) for via in CALLERS
    }
    phases["floor"] = await phases_of(bench.client, bench.client, floor_ids, {}, sent)
    bench.stop_workers()

    ran: dict[str, int] = ran_counts(floor_settings)
    for settings in callers.values():
        ran |= ran_counts(settings)
    bench.check(
        "request_latency: approved commands ran once each",
        (len(CALLERS) + 1) * count,
        sum(1 for n in ran.values() if n == 1),
    )
    result: dict[str, Any] = {"floor": None, "approvals": count}
    for via in CALLERS:
        compared = compare(measured[via], floor_times)
        result["floor"] = compared["floor"]
        result[via], result[f"ratio_{via}"] = compared["ours"], compared["ratio"]
        result[f"p50_ratio_{via}_per_block"] = compared["p50_ratio_per_block"]
        result[f"{via}_request_closed"] = summary_ms(closed[via])
        result[f"{via}_caller_heard"] = summary_ms(heard[via])
        say(f"request_latency: {via} p50 {compared['ours']['p50_ms']} ms, ratio {compared['ratio']}")
    for via in ("child", "nexus"):
        result[f"ratio_{via}_to_bare"] = compare(measured[via], measured["bare"])["ratio"]
    say(f"request_latency: floor p50 {result['floor']['p50_ms']} ms")
    result["phases"] = phases
    say(f"request_latency: phases (median ms after the decision) {phases}")
    return result


async def closed_after(bench: Bench, request_ids: list[str], sent: list[float]) -> list[float]:
    """Seconds from each decision being sent to its `ApprovalRequest` workflow's close (its last
    event): the part of the latency spent before the caller hears of it."""
    out = []
    for rid, at in zip(request_ids, sent, strict=True):
        history = await bench.client.get_workflow_handle(rid).fetch_history()
        out.append(history.events[-1].event_time.ToMicroseconds() / 1e6 - at)
    return out


async def phases_of(
    ours: Client, callers: Client, caller_ids: list[str], requests: dict[str, str], sent: dict[str, float]
) -> dict[str, float]:
    """Each step's median after the decision: the request's (`request.` steps, when the caller
    asks one) then the caller's own."""
    asked, resumed = [], []
    for wid in caller_ids:
        if wid in requests:
            asked.append(steps_after(await ours.get_workflow_handle(requests[wid]).fetch_history(), sent[wid]))
        resumed.append(steps_after(await callers.get_workflow_handle(wid).fetch_history(), sent[wid]))
    return median_steps(asked, "request.") | median_steps(resumed, "caller.")


HEARD = {EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, EventType.EVENT_TYPE_NEXUS_OPERATION_COMPLETED}


async def heard_after(client: Client, caller_ids: list[str], sent: list[float]) -> list[float]:
    """Seconds from each decision being sent to its caller's history recording the result (the
    child's or the Nexus operation's completion), before the caller's next workflow task."""
    out = []
    for wid, at in zip(caller_ids, sent, strict=True):
        history = await client.get_workflow_handle(wid).fetch_history()
        [done] = [e for e in history.events if e.event_type in HEARD]
        out.append(done.event_time.ToMicroseconds() / 1e6 - at)
    return out
