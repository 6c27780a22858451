"""Streamed `message.delta` rows are pruned by the writer once the retention has passed since their
reply ended; the other events and the recorded replies stay, and the inbox shows replies whole."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import text_reply
from doors.control import send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import rows, wait_status
from tests.support.postgres import on_both_backends
from tests.support.scripts import ScriptedModel
from tests.support.ui_fixtures import api_client
from worker import build_worker

RETENTION = 1.0
REPLIES = {"first": " ".join(f"one{n}" for n in range(40)), "second": " ".join(f"two{n}" for n in range(40))}


def _deltas(settings: Settings, cid: str) -> dict[str, int]:
    found = rows(
        settings.approvals_db,
        "SELECT payload_json FROM ui_events WHERE conversation_id = ? AND event_type = 'message.delta'",
        cid,
    )
    turns: dict[str, int] = {}
    for row in found:
        turn = "turn_1" if '"turn_1"' in row["payload_json"] else "later"
        turns[turn] = turns.get(turn, 0) + 1
    return turns


def _others(settings: Settings, cid: str) -> list[str]:
    found = rows(
        settings.approvals_db,
        "SELECT event_key FROM ui_events WHERE conversation_id = ? AND event_type <> 'message.delta'",
        cid,
    )
    return sorted(row["event_key"] for row in found)


@on_both_backends
async def test_delta_rows_go_after_the_retention_and_the_replies_stay_whole(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings = replace(settings, stream_delta_retention=RETENTION)
    model.behaviour = lambda messages: text_reply(REPLIES[[m for m in messages if m["role"] == "user"][-1]["content"]])
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "first"))
        await wait_status(client, cid, "idle")
        first = _deltas(settings, cid)
        others = _others(settings, cid)
        await asyncio.sleep(RETENTION * 1.5)  # the retention passes; the next reply's end prunes
        await send_message(client, cid, "second")
        await wait_status(client, cid, "idle")
        after = _deltas(settings, cid)
        shown = (await http.get(f"/api/conversations/{cid}")).json()

    assert first.get("turn_1", 0) > 1, "the first reply streamed in pieces"
    assert "turn_1" not in after, f"the first reply's pieces are pruned: {after}"
    assert after.get("later", 0) > 0, "the second reply's pieces are younger than the retention"
    assert set(others) <= set(_others(settings, cid)), "no other event is pruned"
    texts = [m.get("content") for m in shown["messages"] if m["role"] == "assistant"]
    assert texts == [REPLIES["first"], REPLIES["second"]]
