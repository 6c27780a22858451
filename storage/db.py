"""SQLite connections for the embedded backend: one writer per process, read-only readers.

WAL mode lets readers (the UI, the CLI) read while the worker writes; the one writer connection
of a process serialises its writes with `BEGIN IMMEDIATE`. The schema comes from the versioned
migrations, applied in one transaction, so a reader never sees half a schema.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Coroutine, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from storage.backend import Component, Dialect
from storage.migrations import latest_version, migrate

T = TypeVar("T")


class SqliteTx:
    """Tx over a sqlite3 connection. Its methods never suspend, so an operation written against
    Tx runs to completion synchronously on the thread that holds the connection (see `drive`)."""

    dialect: Dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, tuple(params)).rowcount

    async def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(sql, tuple(params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        row = self._conn.execute(sql, tuple(params)).fetchone()
        return dict(row) if row is not None else None

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return [dict(row) for row in self._conn.execute(sql, tuple(params))]

    async def append_events(self) -> None:
        """Nothing to do: a SQLite file has one writer at a time, so ids already grow in commit order."""


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (an operation over SqliteTx) to its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a SQLite operation awaited something other than its connection")


def _now() -> str:
    return datetime.now(UTC).isoformat()


def connect_writer(path: Path, component: Component = "projection") -> sqlite3.Connection:
    """The one writer of a process: WAL, autocommit, explicit BEGIN IMMEDIATE per change."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    _use_wal(conn)
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        drive(migrate(SqliteTx(conn), component, _now()))
    except BaseException:
        conn.execute("ROLLBACK")
        conn.close()
        raise
    conn.execute("COMMIT")
    return conn


def _use_wal(conn: sqlite3.Connection, timeout: float = 30.0) -> None:
    """Switching a file to WAL takes a lock that SQLite's busy handler does not wait for, so
    writers opening a new file at once (workers starting together) wait for it here instead."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def connect_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection. A file without the current schema (missing, or just being created
    by a worker) gets it first, so a fresh install reads as empty rather than failing."""
    if not path.exists():
        connect_writer(path).close()
    conn = _open_read_only(path)
    if not _current(conn):
        conn.close()
        connect_writer(path).close()
        conn = _open_read_only(path)
    return conn


def _current(conn: sqlite3.Connection) -> bool:
    try:
        row = conn.execute("SELECT MAX(version) FROM schema_version WHERE component = 'projection'").fetchone()
    except sqlite3.OperationalError:
        return False
    return row[0] is not None and int(row[0]) >= latest_version("projection")


def _open_read_only(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    conn.row_factory = sqlite3.Row
    return conn


def connect_never_waiting(path: Path) -> sqlite3.Connection:
    """A second writer for a file the process's writer has opened (so it exists, in WAL, with its
    schema) that answers at once: a file another writer holds raises `busy` instead of waiting.
    Its commits checkpoint as any writer's do, once the WAL is past 1,000 pages (a few ms, about
    every 300 of a tool's writes): a process whose writes all go this way (a worker's ledger)
    would otherwise grow the WAL without end, since a checkpoint run beside a stream of these
    writes never finds the WAL still at the end it copied, and only then may the WAL start over."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA synchronous=NORMAL")  # timeout=0: no busy wait, in a checkpoint either
    return conn


class Writer:
    """Serialises this process's writes through one connection (sqlite allows one writer).
    `waits=False`: the connection never waits (see `connect_never_waiting`)."""

    def __init__(self, path: Path, component: Component = "projection", waits: bool = True) -> None:
        self.path = path
        self._component: Component = component
        self._waits = waits
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._file: tuple[int, int] | None = None

    def transaction(self) -> _Transaction:
        return _Transaction(self)

    def close_if_in_transaction(self) -> None:
        with self._lock:
            if self._conn is not None and self._conn.in_transaction:
                self._conn.close()
                self._conn = None

    @property
    def opened(self) -> bool:
        """Whether this writer has opened its file (created it, in WAL, with its schema)."""
        return self._conn is not None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        # A deleted file, or one deleted and recreated by another process (a reader, a rebuild),
        # gets a new connection rather than writes into an unlinked inode.
        if self._conn is None or _identity(self.path) != self._file:
            if self._conn is not None:
                self._conn.close()
            self._conn = connect_writer(self.path, self._component) if self._waits else connect_never_waiting(self.path)
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

    def __exit__(self, exc_type: object, exc: object, _tb: object) -> None:
        try:
            if not exc_type:
                self._conn.execute("COMMIT")
            elif self._conn.in_transaction:  # a full disk's error has rolled it back already
                self._conn.execute("ROLLBACK")
        finally:
            self._writer._lock.release()
