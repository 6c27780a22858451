"""Login sessions of the approvals UI: the server-side record every UI process on this file shares.

A row is a keyed hash of a session id (never the id itself, so the file cannot be replayed as a
cookie) and its expiry in Unix seconds. A session is open while its row exists and has not expired;
logging out deletes the row, so the cookie is dead in every process at once. All session SQL is here.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime
from pathlib import Path

from projection.db import Writer
from projection.reader import reading


def open_session(db_path: Path, session_hash: str, expires_at: datetime, replaces: str | None = None) -> None:
    """Record a new session; drop the one it replaces (rotation at login) and every expired one."""
    with Writer(db_path).transaction() as conn:
        conn.execute("DELETE FROM ui_sessions WHERE expires_at <= ? OR session_hash = ?", (int(time.time()), replaces))
        conn.execute(
            "INSERT OR REPLACE INTO ui_sessions (session_hash, expires_at) VALUES (?, ?)",
            (session_hash, int(expires_at.timestamp())),
        )


def session_is_open(db_path: Path, session_hash: str) -> bool:
    with reading(db_path) as conn:
        try:
            row = conn.execute(
                "SELECT 1 FROM ui_sessions WHERE session_hash = ? AND expires_at > ?", (session_hash, int(time.time()))
            ).fetchone()
        except sqlite3.OperationalError:  # a file from before sessions were recorded: none is open
            return False
    return row is not None


def close_session(db_path: Path, session_hash: str) -> None:
    with Writer(db_path).transaction() as conn:
        conn.execute("DELETE FROM ui_sessions WHERE session_hash = ?", (session_hash,))
