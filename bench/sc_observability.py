"""Scenario: approval latency with tracing and metrics on, beside the same with both off, in one run.

Two workers of ours on two task queues: one plain, one with OTEL_EXPORTER_OTLP_ENDPOINT (spans of
the TracingInterceptor and ours, exported over OTLP/HTTP to a receiver in the bench process that
decodes every export) and WORKER_METRICS_PORT (its /metrics, with the Temporal SDK's runtime
metrics, scraped every SCRAPE_SECONDS during the run, as deploy/prometheus/prometheus.yml does).
One approval at a time, alternating; latency is from the decision sent to the approved tool's
result in history (ActivityTaskCompleted).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx

from bench.drive import approval_latencies, approve, new_ids, pending_requests, scalar, start_all, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import summary_ms
from storage.store import ProjectionStore
from tests.observability.otlp_receiver import OtlpReceiver
from tests.support.processes import free_port
from workflows.activity_calls import EXECUTE_TOOL

SCRAPE_SECONDS = 15.0  # Prometheus' usual interval, and the compose configuration's


async def _scrape(port: int, scrapes: list[int]) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(f"http://127.0.0.1:{port}/metrics")).status_code == 200:
                    scrapes.append(1)
            await asyncio.sleep(SCRAPE_SECONDS)


async def run(bench: Bench, count: int) -> dict[str, Any]:
    receiver = OtlpReceiver().start()
    port = free_port()
    off, on = bench.settings("obs-off"), bench.settings("obs-on")
    bench.start_worker(off, "ours", DEFAULT_CACHE)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "WORKER_METRICS_PORT": str(port)}
    bench.start_worker(on, "ours", DEFAULT_CACHE, env=env)
    plain, traced = new_ids("off", count), new_ids("on", count)
    await start_all(bench.client, off, plain)
    await start_all(bench.client, on, traced)
    await wait_pending(off.approvals_db, count)
    await wait_pending(on.approvals_db, count)
    requests = {**pending_requests(off.approvals_db), **pending_requests(on.approvals_db)}
    stores = {id(off): ProjectionStore(off.approvals_db), id(on): ProjectionStore(on.approvals_db)}
    scrapes: list[int] = []
    scraper = asyncio.create_task(_scrape(port, scrapes))
    sent: dict[str, float] = {}
    idle_sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
    try:
        for i in range(count):
            for cid, settings in ((plain[i], off), (traced[i], on)):
                sent[cid] = time.time()
                await approve(bench.client, settings, requests[cid], stores[id(settings)])
                while scalar(settings.approvals_db, idle_sql, cid) != "idle":
                    await asyncio.sleep(0.002)
        off_s = await approval_latencies(bench.client, plain, sent, EXECUTE_TOOL)
        on_s = await approval_latencies(bench.client, traced, sent, EXECUTE_TOOL)
        await asyncio.sleep(2)  # the batch span processor's last export
    finally:
        scraper.cancel()
        for store in stores.values():
            await store.close()
        bench.stop_workers()
        receiver.stop()
    ran = {**ran_counts(off), **ran_counts(on)}
    bench.check("observability: every approved tool ran once", 2 * count, sum(1 for n in ran.values() if n == 1))
    traced_tools = {s.trace_id for s in receiver.spans if s.name == f"RunActivity:{EXECUTE_TOOL}"}
    bench.check("observability: a tool-run span per traced approval", count, len(traced_tools))
    bench.check("observability: /metrics answered during the run", True, len(scrapes) > 0)
    plain_ms, traced_ms = summary_ms(off_s), summary_ms(on_s)
    ratio = round(traced_ms["p50_ms"] / plain_ms["p50_ms"], 3)
    say(f"observability: off p50 {plain_ms['p50_ms']} ms, on p50 {traced_ms['p50_ms']} ms, ratio {ratio}")
    return {
        "off": plain_ms,
        "on": traced_ms,
        "ratio": ratio,
        "approvals": count,
        "spans_received": len(receiver.spans),
        "scrapes": len(scrapes),
    }
