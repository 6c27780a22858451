"""Scenario: how many rows `ui_events` holds after many streamed replies, with and without pruning.

Each reply goes through the worker's own write path for streamed text: a DeltaPublisher (one
`message.delta` event per flush, here one per piece) into a ProjectionStore, then one event that
stands for the workflow's recorded message. The replies are written one after another, paced so
that the run lasts several retentions (RETENTION seconds, instead of the default hour, so the
retention passes within the run). Without pruning every piece stays; with it, each ended reply
takes one bounded pass and the table holds only the last retention's pieces. Run once per
projection backend (SQLite, PostgreSQL).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from activities.stream_publisher import DeltaPublisher
from bench.harness import Bench, say
from core.projection_model import ProjectionEvent
from storage.store import ProjectionStore

PIECES = 40  # pieces a reply
RETENTION = 1.0
PACE_SECONDS = 0.02  # between replies: 500 replies last at least ten retentions
SAMPLE_EVERY = 25


async def _count(store: ProjectionStore, sql: str) -> int:
    row = await store.backend.run(lambda tx: tx.fetchone(sql), write=False)
    return int(row["n"]) if row else 0


async def _replies(store: ProjectionStore, count: int) -> dict[str, Any]:
    peak = 0
    started = time.monotonic()
    for n in range(count):
        cid = f"deltas-{n % 10}"
        publisher = DeltaPublisher(
            store, conversation_id=cid, turn_id=f"turn_{n}", call_key=f"call-{n}", call_id="1", attempt=1, every=0.0
        )
        await publisher.start()
        for piece in range(PIECES):
            await publisher.add(f"w{piece} ")
        await publisher.finish()
        recorded = ProjectionEvent(event_key=f"recorded:{n}", event_type="message.recorded", conversation_id=cid)
        await store.append_stream_event(recorded)
        if n % SAMPLE_EVERY == SAMPLE_EVERY - 1:
            peak = max(peak, await _count(store, "SELECT COUNT(*) AS n FROM ui_events"))
        await asyncio.sleep(PACE_SECONDS)
    return {
        "rows": await _count(store, "SELECT COUNT(*) AS n FROM ui_events"),
        "delta_rows": await _count(store, "SELECT COUNT(*) AS n FROM ui_events WHERE event_type = 'message.delta'"),
        "other_rows": await _count(store, "SELECT COUNT(*) AS n FROM ui_events WHERE event_type <> 'message.delta'"),
        "peak_rows": peak,
        "seconds": round(time.monotonic() - started, 1),
    }


async def run(bench: Bench, count: int) -> dict[str, Any]:
    results: dict[str, Any] = {"replies": count, "pieces_per_reply": PIECES, "retention_seconds": RETENTION}
    for backend in ("sqlite", "postgresql"):
        for pruned in (False, True):
            settings = bench.settings(f"deltas-{backend}-{'pruned' if pruned else 'kept'}", backend=backend)
            store = ProjectionStore(settings.approvals_db, delta_retention_seconds=RETENTION if pruned else None)
            try:
                figures = await _replies(store, count)
            finally:
                await store.close()
            key = f"{backend}_{'pruned' if pruned else 'kept'}"
            results[key] = figures
            say(f"{key}: {figures}")
            bench.check(f"deltas {key}: every recorded message kept", count, figures["other_rows"])
            if not pruned:
                bench.check(f"deltas {key}: every piece kept", count * (PIECES + 1), figures["delta_rows"])
        kept, pruned_rows = results[f"{backend}_kept"]["delta_rows"], results[f"{backend}_pruned"]["delta_rows"]
        bench.check(f"deltas {backend}: pruning keeps fewer than a tenth of the pieces", True, pruned_rows * 10 < kept)
    return results
