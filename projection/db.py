"""The SQLite approvals projection: schema, one writer connection, read-only readers.

A read model only: Temporal's history is the source of truth, and every write here is
idempotent, so a retried or replayed activity never duplicates a row or an event.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS ui_pending_approvals (
    request_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    permission_type TEXT NOT NULL,
    details_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT,
    resolved_at TEXT,
    decision TEXT,
    decided_by TEXT,
    reason TEXT,
    kv_snapshot_json TEXT NOT NULL DEFAULT '{}',
    execution_state TEXT,
    UNIQUE (conversation_id, tool_call_id)
);
CREATE INDEX IF NOT EXISTS ui_pending_approvals_unresolved
    ON ui_pending_approvals (conversation_id, created_at) WHERE resolved_at IS NULL;
CREATE TABLE IF NOT EXISTS ui_conversations (
    conversation_id TEXT PRIMARY KEY,
    turn_status TEXT NOT NULL,
    pending_count INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS ui_conversations_updated ON ui_conversations (updated_at DESC);
CREATE TABLE IF NOT EXISTS ui_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    event_key TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ui_transcript_archive (
    conversation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message_json TEXT NOT NULL,
    archived_at TEXT NOT NULL,
    PRIMARY KEY (conversation_id, seq)
);
CREATE TABLE IF NOT EXISTS ui_decision_claims (
    request_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT,
    decided_by TEXT,
    claimed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ui_decision_facts (
    request_id TEXT PRIMARY KEY,
    decided_via TEXT,
    decided_args_hash TEXT
);
CREATE TABLE IF NOT EXISTS ui_users (
    name TEXT PRIMARY KEY,
    token_id TEXT NOT NULL UNIQUE,
    groups_json TEXT NOT NULL,
    salt TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ui_partial_approvals (
    request_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    approved_at TEXT NOT NULL,
    PRIMARY KEY (request_id, principal)
);
CREATE TABLE IF NOT EXISTS ui_session_people (
    session_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ui_sessions (
    session_hash TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
"""


def connect_writer(path: Path, schema: str = SCHEMA) -> sqlite3.Connection:
    """The one writer of a process: WAL, autocommit, explicit BEGIN IMMEDIATE per change."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA synchronous=NORMAL")
    # One transaction: a reader never sees half a schema.
    conn.executescript(f"BEGIN IMMEDIATE;\n{schema}\nCOMMIT;")
    conn.row_factory = sqlite3.Row
    return conn


def connect_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection. A file without the schema (missing, or just being created by a
    worker) gets it first, so a fresh install reads as empty rather than failing."""
    if not path.exists():
        connect_writer(path).close()
    conn = _open_read_only(path)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'ui_pending_approvals'").fetchone() is None:
        conn.close()
        connect_writer(path).close()
        conn = _open_read_only(path)
    return conn


def _open_read_only(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    conn.row_factory = sqlite3.Row
    return conn


class Writer:
    """Serialises this process's writes through one connection (sqlite allows one writer)."""

    def __init__(self, path: Path, schema: str = SCHEMA) -> None:
        self.path = path
        self._schema = schema
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None

    def transaction(self) -> _Transaction:
        return _Transaction(self)

    def _connection(self) -> sqlite3.Connection:
        # A deleted file, or one deleted and recreated by another process (a reader, a rebuild),
        # gets a new connection rather than writes into an unlinked inode.
        if self._conn is None or _identity(self.path) != self._file:
            if self._conn is not None:
                self._conn.close()
            self._conn = connect_writer(self.path, self._schema)
            self._file = _identity(self.path)
        return self._conn


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


class _Transaction:
    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    def __enter__(self) -> sqlite3.Connection:
        self._writer._lock.acquire()
        try:
            conn = self._writer._connection()
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._writer._lock.release()
            raise
        self._conn = conn
        return conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self._conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._writer._lock.release()
