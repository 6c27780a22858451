"""SQLite readers are woken by commits of another process (inotify on the WAL), not by a poll."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from core.projection_model import ProjectionEvent
from storage.store import ProjectionStore

WRITE_ONE = """
import asyncio, sys
from core.projection_model import ProjectionEvent
from storage.store import ProjectionStore

async def main():
    store = ProjectionStore(sys.argv[1])
    event = ProjectionEvent(
        event_key="other:1", event_type="message.delta", conversation_id="c", payload={"text": "hi"}
    )
    await store.append_stream_event(event)
    await store.close()

asyncio.run(main())
"""


async def test_a_commit_by_another_process_wakes_the_reader_and_reading_wakes_no_one(tmp_path: Path) -> None:
    database = tmp_path / "approvals.db"
    own = ProjectionStore(database)
    await own.append_stream_event(
        ProjectionEvent(event_key="own:1", event_type="message.delta", conversation_id="c", payload={"text": "a"})
    )
    mark = await own.event_mark()
    for _ in range(3):  # a reader's own reads write nothing to the WAL: no wake-up loop
        await own.events(0)
    await asyncio.sleep(0.2)
    assert await own.event_mark() == mark
    waiting = asyncio.create_task(own.wait_for_events(60.0, mark))
    root = Path(__file__).resolve().parents[2]
    writer = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", WRITE_ONE, str(database)], cwd=root, capture_output=True, text=True
    )
    assert writer.returncode == 0, writer.stderr
    await asyncio.wait_for(waiting, 30.0)
    assert await own.event_mark() > mark  # woken by the commit it saw, not by a timeout
    events, _ = await own.events(0)
    assert [e["payload"]["text"] for e in events] == ["a", "hi"]
    await own.close()
