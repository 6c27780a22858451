"""Events a running activity appends beside the workflow's own: the model's reply as it streams.

They feed the same ordered log (and so the UI's stream and `watch`) but hold nothing Temporal's
history needs: a rebuild from history does not bring them back, and the recorded message stays
the one truth.
"""

from __future__ import annotations

from projection.backend import Tx
from projection.writes import insert_event, now_iso
from workflows.models import ProjectionEvent


async def append_event(tx: Tx, event: ProjectionEvent) -> None:
    """Once per event_key, so a repeated write is a no-op."""
    await tx.append_events()
    await insert_event(tx, event, now_iso())
