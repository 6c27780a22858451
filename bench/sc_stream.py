"""Scenario: what streaming a reply costs, and how soon its first words reach a reader of the UI.

A scripted model streams a 200-token reply (a chunk of about one token every 10 ms). One worker
streams (LLM_STREAM=on), another asks for whole replies (off); conversations run one at a time.
A reader follows the read model with the UI's own SSE generator (ui/events.py, minus the socket).
Without streaming the scripted model answers after the time it takes to stream the reply, so both
modes wait for the same generation time.
The streaming worker runs once with the read model on SQLite (the reader woken by inotify on the
WAL) and once on PostgreSQL (woken by LISTEN/NOTIFY).
Measured per reply: the model's first piece of text (sent one chunk delay after its opening chunk,
which carries the role and no text) to the first `message.delta` at the reader (time to first
token), the same moment to `turn.completed` at the reader (whole reply), the
projection events written, and the Temporal history events of the conversation.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from bench import stream_probe
from bench.harness import DEFAULT_CACHE, Bench, say
from bench.stats import summary_ms
from core.contract import QUERY_GET_STATE
from core.projection_model import ProjectionEvent
from demo_model.server import ScriptedModelServer, text_reply
from doors.control import start_conversation
from storage.store import ProjectionStore
from ui.events import stream_events

REPLY = " ".join(f"token{n:03d}" for n in range(100))  # 200 four-character pieces
CHUNK_DELAY = 0.01


class _Open:
    """The request object stream_events asks whether the browser went away (never, here) and,
    every few seconds, whether its credential still holds (no UI token is set: it does)."""

    app = SimpleNamespace(state=SimpleNamespace(settings=SimpleNamespace(ui_token=None)))

    async def is_disconnected(self) -> bool:
        return False


async def _follow(store: ProjectionStore, seen: dict[tuple[str, str], float]) -> None:
    async for chunk in stream_events(_Open(), store, 0):  # type: ignore[arg-type]
        for line in chunk.splitlines():
            if line.startswith("data: ") and '"event_type"' in line:
                event = json.loads(line[6:])
                seen.setdefault((event["conversation_id"], event["event_type"]), time.monotonic())


async def _mode(
    bench: Bench, model: ScriptedModelServer, asked: dict[str, float], stream: bool, count: int, backend: str = "sqlite"
) -> Any:
    name = ("stream_on" if stream else "stream_off") + ("_pg" if backend == "postgresql" else "")
    settings = replace(bench.settings(name, backend=backend), openai_base_url=model.base_url, llm_stream=stream)
    bench.start_worker(settings, "ours", DEFAULT_CACHE)
    store = ProjectionStore(settings.approvals_db)
    seen: dict[tuple[str, str], float] = {}
    reader = asyncio.create_task(_follow(store, seen))
    first, whole, history, deltas = [], [], [], []
    recorded = 0
    try:
        for n in range(count):
            cid = f"{name.replace('_', '-')}-{n}"
            await start_conversation(bench.client, settings, f"stream {cid}", cid)
            deadline = time.monotonic() + 120
            while (cid, "turn.completed") not in seen:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{cid} did not complete")
                await asyncio.sleep(0.005)
            # Without streaming the first words a reader gets are the recorded message's.
            first.append(seen.get((cid, "message.delta"), seen[(cid, "turn.completed")]) - asked[cid])
            whole.append(seen[(cid, "turn.completed")] - asked[cid])
            events, _ = await store.events(0, cid, limit=10_000)
            deltas.append(sum(1 for e in events if e["event_type"] == "message.delta"))
            history.append(len((await bench.client.get_workflow_handle(cid).fetch_history()).events))
            state = await bench.client.get_workflow_handle(cid).query(QUERY_GET_STATE)
            recorded += [m["content"] for m in state["messages"] if m["role"] == "assistant"] == [REPLY]
        bench.check(f"stream: {name}: each conversation recorded the whole reply once", count, recorded)
    finally:
        reader.cancel()
        bench.stop_workers()
        await store.close()
    return {
        "first_token_at_reader": summary_ms(first),
        "whole_reply_at_reader": summary_ms(whole),
        "delta_events_per_reply": max(deltas),
        "history_events_per_conversation": sorted(set(history)),
    }


async def run(bench: Bench, count: int) -> dict[str, Any]:
    asked: dict[str, float] = {}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        cid = next(m["content"] for m in body["messages"] if m["role"] == "user").split()[-1]
        # The opening chunk (the role, no text) goes out right after this, the first text one chunk
        # delay later: times are from that first piece of text.
        asked.setdefault(cid, time.monotonic() + (CHUNK_DELAY if body.get("stream") else 0.0))
        if not body.get("stream"):  # a whole reply comes when the model has written all of it
            time.sleep(len(REPLY) // 4 * CHUNK_DELAY)
        return text_reply(REPLY)

    model = ScriptedModelServer(respond, chunk_delay=CHUNK_DELAY).start()
    try:
        on = await _mode(bench, model, asked, True, count)
        on_postgres = await _mode(bench, model, asked, True, count, backend="postgresql")
        off = await _mode(bench, model, asked, False, count)
    finally:
        model.stop()
    pieces = len(REPLY) // 4
    probe = await stream_probe.measure(
        bench.client, [REPLY[i : i + 4] for i in range(0, len(REPLY), 4)], CHUNK_DELAY, count
    )
    workflow_streams = {
        "first_token_at_subscriber": summary_ms(probe["first_piece_seconds"]),
        "history_events_per_reply": sorted(set(probe["history_events"])),
        "publish_signals_per_reply": sorted(set(probe["publish_signals"])),
        "poll_updates_per_reply": sorted(set(probe["poll_updates"])),
    }
    write_ms = await _write_cost(bench)
    say(f"stream: first token {on['first_token_at_reader']}, {on['delta_events_per_reply']} events for {pieces} pieces")
    say(f"stream: first token on PostgreSQL {on_postgres['first_token_at_reader']}")
    return {
        "on": on,
        "on_postgres": on_postgres,
        "off": off,
        "workflow_streams": workflow_streams,
        "delta_write_ms": write_ms,
        "replies_each": count,
        "pieces_per_reply": pieces,
        "chunk_delay_ms": CHUNK_DELAY * 1000,
    }


async def _write_cost(bench: Bench, writes: int = 300) -> dict[str, float]:
    """One message.delta write through the read model's store (SQLite), as the activity does it."""
    store = ProjectionStore(bench.settings("stream_writes").approvals_db)
    spent = []
    try:
        for n in range(writes):
            event = ProjectionEvent(
                event_key=f"delta:bench:{n}",
                event_type="message.delta",
                conversation_id="bench",
                payload={"text": "abcd"},
            )
            started = time.monotonic()
            await store.append_stream_event(event)
            spent.append(time.monotonic() - started)
    finally:
        await store.close()
    return summary_ms(spent)
