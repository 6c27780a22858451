"""Which AG-UI messages a conversation has already taken, so a message an AG-UI client sends again
(clients resend the whole thread with every run) never becomes a second turn.

The mark is a row of the ordered event log (`agui.message`, keyed by conversation and message id,
written once): it needs no schema of its own, and a reader of the log sees when each was taken.
A rebuild of the read model from Temporal's history does not bring the marks back; after one, a
client that resends old messages with no reply after them would have them taken again.
"""

from __future__ import annotations

from core.projection_model import ProjectionEvent
from storage.backend import Tx
from storage.store import ProjectionStore

EVENT_AGUI_MESSAGE = "agui.message"


def _key(conversation_id: str, message_id: str) -> str:
    return f"agui:{conversation_id}:{message_id}"


async def was_taken(store: ProjectionStore, conversation_id: str, message_id: str) -> bool:
    async def operation(tx: Tx) -> bool:
        key = _key(conversation_id, message_id)
        row = await tx.fetchone("SELECT 1 AS found FROM ui_events WHERE event_key = ?", (key,))
        return row is not None

    return await store.backend.run(operation, write=False)


async def mark_taken(store: ProjectionStore, conversation_id: str, message_id: str) -> None:
    event = ProjectionEvent(
        event_key=_key(conversation_id, message_id),
        event_type=EVENT_AGUI_MESSAGE,
        conversation_id=conversation_id,
        payload={"message_id": message_id},
    )
    await store.append_stream_event(event)
