"""A working session whose tools return real amounts of text: 20 reads of a 16 KB file per turn,
for 30 turns under `make test-scale` (7 in `make test`, 2.2 MB, already past what Temporal carries in one
payload), with compaction out of the way (a budget no transcript reaches), so the whole transcript
goes with every model call. Every turn completes, no payload in the history reaches the store's
threshold (the transcript travels by reference), the model is asked once per assistant message,
replay passes. The same scenario under a context budget is tests/durability/test_compaction.py's."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from doors.control import get_state, send_message, start_conversation
from payload_store.blob_tree import dumps
from payload_store.history import payload_sizes, references
from tests.conftest import HistoryRecorder
from tests.support.failure_support import assistant_count, holds
from tests.support.helpers import new_workspace, rows
from tests.support.scale import at_scale
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

READS = 20
FILE = "".join(f"{i:05d} a line of a sixteen kilobyte workspace file.......\n" for i in range(300))[:16_000]
TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024  # the largest payload Temporal accepts in a history


# 600 reads at full size, each a sandboxed process: minutes beside the suite's other processes.
@pytest.mark.timeout(1200)
@at_scale("turns", quick=7, full=30)
async def test_turns_of_twenty_16kb_reads(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, turns: int
) -> None:
    settings = dataclasses.replace(settings, context_budget_tokens=10**9)
    planned, ws = new_workspace(settings)
    (ws / "notes.txt").write_text(FILE)
    model.behaviour = calls_then_summary(*[(f"call_{i}", "read_file", {"path": "notes.txt"}) for i in range(READS)])
    marker = "read notes.txt twenty times, every turn"
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, marker, planned))
        for turn in range(1, turns + 1):
            if turn > 1:
                await send_message(client, cid, f"again, turn {turn}")
            await holds(functools.partial(completed, settings, cid, turn), timeout=300)
        state = await get_state(client, cid)
    assert state.turn_status == "idle" and state.turn_id == f"turn_{turns}"
    tool_results = [m.content for m in state.messages if m.role == "tool"]
    assert tool_results == [FILE] * (READS * turns)
    assert model.assistant_messages_requested_for(marker) == assistant_count(state) == 2 * turns
    assert len(rows(settings.approvals_db, "SELECT 1 FROM ui_events WHERE event_type = 'turn.failed'")) == 0

    runs = [execution async for execution in client.list_workflows(f"WorkflowId = '{cid}'")]
    inline: list[int] = []
    stored: list[int] = []
    for execution in runs:
        history = await client.get_workflow_handle(cid, run_id=execution.run_id).fetch_history()
        sizes = payload_sizes(history)
        inline += sizes.inline
        stored += sizes.external
        assert all(r.driver_name == "local-blobs" for r in references(history))
    assert max(inline) < settings.payload_store_threshold
    # The last model input holds the whole transcript: every turn's reads, past Temporal's limit.
    assert max(stored) > READS * len(FILE) * turns > TEMPORAL_PAYLOAD_LIMIT
    # Content-addressed: the file read READS * turns times is stored once, not once per model call.
    store = Path(settings.payload_store_location)
    assert sum(dumps(FILE) in p.read_bytes() for p in store.rglob("*") if p.is_file()) == 1
    # The replay of every run happens in the histories fixture, from the same payload store.


def completed(settings: Settings, conversation_id: str, turn: int) -> bool:
    key = f"{conversation_id}:turn_{turn}:turn.completed"
    return bool(rows(settings.approvals_db, "SELECT 1 FROM ui_events WHERE event_key = ?", key))
