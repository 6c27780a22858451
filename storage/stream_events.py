"""Events a running activity appends beside the workflow's own: the model's reply as it streams.

They feed the same ordered log (and so the UI's stream and `watch`) but hold nothing Temporal's
history needs: a rebuild from history does not bring them back, and the recorded message stays
the one truth. So they are pruned: when a reply's last piece is written, the writer deletes up to
PRUNE_BATCH pieces older than the retention (STREAM_DELTA_RETENTION_SECONDS), oldest first. A
reply's pieces are all written before its final message is recorded, so each goes about the
retention after its reply ended (a reply that streamed longer than the retention loses its
earliest pieces first); every reply that ends takes one bounded pass, so the table stays bounded.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.projection_model import ProjectionEvent
from storage.backend import Tx
from storage.writes import insert_event, now_iso

EVENT_MESSAGE_DELTA = "message.delta"
PRUNE_BATCH = 2000


async def append_event(tx: Tx, event: ProjectionEvent) -> None:
    """Once per event_key, so a repeated write is a no-op."""
    await tx.append_events()
    await insert_event(tx, event, now_iso())


def ends_a_reply(event: ProjectionEvent) -> bool:
    return event.event_type == EVENT_MESSAGE_DELTA and bool(event.payload.get("done"))


# The event type is written into the statements, not bound: a plan PostgreSQL makes once for every
# value of a parameter could not use the partial index on the pieces (ui_events_deltas).
_OLDEST_PIECE = f"SELECT created_at FROM ui_events WHERE event_type = '{EVENT_MESSAGE_DELTA}' ORDER BY event_id LIMIT 1"
_DELETE_OLD_PIECES = f"""DELETE FROM ui_events WHERE event_id IN (
    SELECT event_id FROM ui_events WHERE event_type = '{EVENT_MESSAGE_DELTA}' AND created_at < ?
    ORDER BY event_id LIMIT ?)"""


async def prune_deltas(tx: Tx, retention_seconds: float, limit: int = PRUNE_BATCH) -> int:
    """Delete up to `limit` streamed pieces written more than `retention_seconds` ago; how many went.
    The oldest piece is looked at first: while it is younger than the retention (most replies'
    ends), nothing is scanned, however many pieces the retention keeps."""
    cutoff = (datetime.now(UTC) - timedelta(seconds=retention_seconds)).isoformat()
    oldest = await tx.fetchone(_OLDEST_PIECE)
    if oldest is None or str(oldest["created_at"]) >= cutoff:
        return 0
    return await tx.execute(_DELETE_OLD_PIECES, (cutoff, limit))
