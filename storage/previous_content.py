"""What an approved write_file replaced, kept for an undo for a retention, then pruned.

One row per request: the bytes before (base64, so both backends store them alike), their hash and
the hash of what the write left, which an undo checks so it never overwrites a later change.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from storage.backend import Tx


@dataclass(frozen=True)
class PreviousContent:
    request_id: str
    conversation_id: str
    path: str
    before: bytes
    before_hash: str
    after_hash: str
    stored_at: str


async def keep(tx: Tx, kept: PreviousContent, retention_seconds: float) -> None:
    """Keep one write's previous content (once) and drop what is older than the retention."""
    cutoff = (datetime.now(UTC) - timedelta(seconds=retention_seconds)).isoformat()
    await tx.send("DELETE FROM ui_previous_content WHERE stored_at < ?", (cutoff,))
    await tx.send(
        """INSERT INTO ui_previous_content (request_id, conversation_id, path, before_b64, before_hash,
             after_hash, stored_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""",
        (
            kept.request_id,
            kept.conversation_id,
            kept.path,
            base64.b64encode(kept.before).decode(),
            kept.before_hash,
            kept.after_hash,
            kept.stored_at,
        ),
    )


async def find(tx: Tx, request_id: str) -> PreviousContent | None:
    row = await tx.fetchone("SELECT * FROM ui_previous_content WHERE request_id = ?", (request_id,))
    if row is None:
        return None
    return PreviousContent(
        request_id=row["request_id"],
        conversation_id=row["conversation_id"],
        path=row["path"],
        before=base64.b64decode(row["before_b64"]),
        before_hash=row["before_hash"],
        after_hash=row["after_hash"],
        stored_at=row["stored_at"],
    )
