"""Projection loss and staleness: rebuild_projection restores what Temporal holds, idempotently."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_CLOSE
from core.conversation_model import CloseInput, DecisionInput
from demo_model.server import text_reply
from doors.control import get_state, send_decision, send_message, start_conversation
from maintenance.rebuild import rebuild_projection
from tests.conftest import HistoryRecorder
from tests.support.failure_support import by_marker, projection_catches_up
from tests.support.helpers import approval_row, pending_rows, rows, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

TWO, ONE, IDLE, ENDED = "two asks", "one ask", "just talk", "then close"


def lose(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def copy_db(source: Path, target: Path) -> None:
    """sqlite's backup API: a consistent copy of a WAL-mode file."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def event_keys(db: Path) -> list[str]:
    return [r["event_key"] for r in rows(db, "SELECT event_key FROM ui_events ORDER BY event_key")]


async def test_rebuild_restores_lost_and_stale_projection(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    db = settings.approvals_db
    assert isinstance(db, Path), "this test loses and restores a SQLite file"
    model.behaviour = by_marker(
        {
            TWO: calls_then_summary(
                ("call_1", "write_file", {"path": "a.txt", "content": "a"}),
                ("call_2", "run_shell", {"command": "echo b >> b.log"}),
            ),
            ONE: calls_then_summary(("call_1", "write_file", {"path": "c.txt", "content": "c"})),
            IDLE: lambda messages: text_reply("hi"),
            ENDED: lambda messages: text_reply("bye"),
        }
    )
    async with build_worker(client, settings):
        ids = {m: histories.track(await start_conversation(client, settings, m)) for m in (TWO, ONE, IDLE, ENDED)}
        await wait_pending(db, ids[TWO], 2)
        [one] = await wait_pending(db, ids[ONE], 1)
        await wait_status(client, ids[IDLE], "idle")
        await wait_status(client, ids[ENDED], "idle")
        ended = client.get_workflow_handle(ids[ENDED])
        await ended.signal(SIGNAL_CLOSE, CloseInput())
        await ended.result()
        copy_db(db, tmp_path / "stale.db")
        await send_decision(client, settings, DecisionInput(request_id=one["request_id"], decision="deny"))
        await wait_status(client, ids[ONE], "idle")

        # Lost: the file is gone while approvals wait.
        lose(db)
        report = await rebuild_projection(client, settings)
        assert (report.conversations, report.queried, report.ended, report.pending_restored) == (4, 3, 1, 2)
        assert "2 pending approval(s) restored" in report.summary()
        states = {m: await get_state(client, ids[m]) for m in (TWO, ONE, IDLE)}
        for state in states.values():
            await projection_catches_up(client, db, state.conversation_id)
        assert rows(db, "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?", ids[ENDED]) == [
            {"turn_status": "closed"}
        ]
        restored = pending_rows(db, ids[TWO])
        assert {r["tool_name"] for r in restored} == {"write_file", "run_shell"}
        assert all(r["turn_id"] == "turn_1" for r in restored)

        # Idempotent: a second run changes nothing and duplicates no event.
        keys = event_keys(db)
        again = await rebuild_projection(client, settings)
        assert (again.pending_restored, again.stale_resolved) == (0, 0)
        assert event_keys(db) == keys and len(set(keys)) == len(keys)

        # Stale: an old copy still shows a request that was denied since; the rebuild resolves it.
        lose(db)
        copy_db(tmp_path / "stale.db", db)
        stale = await rebuild_projection(client, settings)
        assert stale.stale_resolved == 1
        assert approval_row(db, one["request_id"])["decision"] == "deny"
        for state in states.values():
            await projection_catches_up(client, db, state.conversation_id)

        # The rebuilt rows are live: deciding them from the projection completes the turn.
        for row in pending_rows(db, ids[TWO]):
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, ids[TWO], "idle")
        assert (workspace_of(settings, ids[TWO]) / "a.txt").read_text() == "a"
        assert (workspace_of(settings, ids[TWO]) / "b.log").read_text() == "b\n"
        await send_message(client, ids[ONE], "once more")
        await wait_pending(db, ids[ONE], 1)

    # No worker: queries time out, and the status comes from the search attributes.
    lose(db)
    blind = await rebuild_projection(client, settings, query_timeout=timedelta(seconds=1))
    assert sorted(blind.unreachable) == sorted([ids[TWO], ids[ONE], ids[IDLE]])
    assert "is a worker running?" in blind.summary()
    conversations = rows(db, "SELECT conversation_id, turn_status, pending_count FROM ui_conversations")
    assert {r["conversation_id"]: (r["turn_status"], r["pending_count"]) for r in conversations} == {
        ids[TWO]: ("idle", 0),
        ids[ONE]: ("awaiting_approval", 1),
        ids[IDLE]: ("idle", 0),
        ids[ENDED]: ("closed", 0),
    }
