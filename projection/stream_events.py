"""Events a running activity appends beside the workflow's own: the model's reply as it streams.

They feed the same ordered log (and so the UI's stream and `watch`) but hold nothing Temporal's
history needs: a rebuild from history does not bring them back, and the recorded message stays
the one truth.
"""

from __future__ import annotations

import json

from projection.backend import Tx
from projection.writes import now_iso
from workflows.models import ProjectionEvent


async def append_event(tx: Tx, event: ProjectionEvent) -> None:
    """Once per event_key, so a repeated write is a no-op."""
    await tx.append_events()
    await tx.execute(
        """INSERT INTO ui_events (event_key, event_type, conversation_id, payload_json, created_at)
           VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_key) DO NOTHING""",
        (
            event.event_key,
            event.event_type,
            event.conversation_id,
            json.dumps(event.payload, sort_keys=True),
            now_iso(),
        ),
    )
