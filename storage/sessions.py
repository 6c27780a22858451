"""Login sessions of the approvals UI: the server-side record every UI process shares.

A row is a keyed hash of a session id (never the id itself, so the table cannot be replayed as a
cookie) and its expiry in Unix seconds. A session is open while its row exists and has not expired;
logging out deletes the row, so the cookie is dead in every process at once. All session SQL is here.
"""

from __future__ import annotations

import time
from datetime import datetime

from storage.backend import Tx


async def open_session(tx: Tx, session_hash: str, expires_at: datetime, replaces: str | None = None) -> None:
    """Record a new session; drop the one it replaces (rotation at login) and every expired one."""
    await tx.send("DELETE FROM ui_sessions WHERE expires_at <= ? OR session_hash = ?", (int(time.time()), replaces))
    await tx.send(
        "INSERT INTO ui_sessions (session_hash, expires_at) VALUES (?, ?)"
        " ON CONFLICT (session_hash) DO UPDATE SET expires_at = excluded.expires_at",
        (session_hash, int(expires_at.timestamp())),
    )


async def session_is_open(tx: Tx, session_hash: str) -> bool:
    row = await tx.fetchone(
        "SELECT 1 AS open FROM ui_sessions WHERE session_hash = ? AND expires_at > ?", (session_hash, int(time.time()))
    )
    return row is not None


async def close_session(tx: Tx, session_hash: str) -> None:
    await tx.send("DELETE FROM ui_sessions WHERE session_hash = ?", (session_hash,))
