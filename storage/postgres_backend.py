"""The shared backend: PostgreSQL through psycopg 3's async pool, for workers and UIs on many hosts.

Every write runs in one transaction on a pooled connection (READ COMMITTED; the queries are
written so that an atomic `INSERT ... ON CONFLICT` or a conditional `UPDATE` arbitrates races),
pipelined so that statements nobody waits on share a round trip (`PostgresTx`);
a read runs its statements in autocommit, which at READ COMMITTED sees what a transaction would.
New ui_events rows are announced with NOTIFY, and the UI's stream LISTENs instead of polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from storage.backend import Component, Dialect, Done, Operation, T
from storage.migrations import migrate

log = logging.getLogger(__name__)
CHANNEL = "ui_events"
# Two advisory lock keys: one for schema upgrades, one that orders event ids by commit.
SCHEMA_LOCK = 72_610_001
EVENTS_LOCK = 72_610_002
POOL_SIZE = 10


class PostgresTx:
    """In a write the connection is in pipeline mode: BEGIN and the statements whose answers nobody
    waits for (`send`, the event lock and NOTIFY) go out together with the next statement that needs
    one, or with the COMMIT. The resolution a tool writes beside its run (seven statements between
    BEGIN and COMMIT) is then one round trip instead of nine, each of which woke this process and the
    server on busy cores."""

    dialect: Dialect = "postgresql"

    def __init__(
        self, conn: psycopg.AsyncConnection[dict[str, Any]], pipeline: psycopg.AsyncPipeline | None = None
    ) -> None:
        self._conn = conn
        self._pipeline = pipeline

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = await self._conn.execute(self._sql(sql), tuple(params))  # type: ignore[arg-type]
        if self._pipeline is not None:
            await self._pipeline.sync()  # the count is known once the server has answered
        return cursor.rowcount

    async def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self._conn.execute(self._sql(sql), tuple(params))  # type: ignore[arg-type]

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        cursor = await self._conn.execute(self._sql(sql), tuple(params))  # type: ignore[arg-type]
        return await cursor.fetchone()

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = await self._conn.execute(self._sql(sql), tuple(params))  # type: ignore[arg-type]
        return await cursor.fetchall()

    async def append_events(self) -> None:
        # Identity values are handed out at insert time, not at commit: without this lock a reader
        # could see id 12 committed before id 11 and never come back for 11.
        await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (EVENTS_LOCK,))
        await self._conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))  # delivered at commit


class PostgresBackend:
    def __init__(self, url: str, component: Component, pool_size: int = POOL_SIZE) -> None:
        self.location = url
        self._component: Component = component
        self._pool_size = pool_size
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[dict[str, Any]]] | None = None
        self._opening = asyncio.Lock()
        self._listener: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._version = 0

    async def _ready(self) -> AsyncConnectionPool[psycopg.AsyncConnection[dict[str, Any]]]:
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                pool: AsyncConnectionPool[psycopg.AsyncConnection[dict[str, Any]]] = AsyncConnectionPool(
                    self.location,
                    min_size=1,
                    max_size=self._pool_size,
                    open=False,
                    # Every statement prepared (parsed and planned once per connection) on its
                    # first run, not its sixth: planning costs more than running most of these.
                    kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0},
                )
                await pool.open(wait=True, timeout=30)
                async with pool.connection() as conn, conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    await migrate(PostgresTx(conn), self._component, datetime.now(UTC).isoformat())
                self._pool = pool
        return self._pool

    async def run(self, operation: Operation[T], *, write: bool = True) -> T:
        """write=False runs the statements in autocommit, each its own transaction: a read, or
        statements each atomic on its own (a decision's claim), saving BEGIN and COMMIT."""
        pool = await self._ready()
        if not write:
            # A read needs no BEGIN and COMMIT: at READ COMMITTED each statement takes its own
            # snapshot inside a transaction too, so autocommit reads see the same and save two round trips.
            async with pool.connection() as conn:
                return await operation(PostgresTx(conn))
        async with pool.connection() as conn:
            try:
                # BEGIN and COMMIT by hand: psycopg's transaction() syncs the pipeline on entering
                # and on leaving it, two round trips more.
                async with conn.pipeline() as pipeline:
                    await conn.execute("BEGIN")
                    result = await operation(PostgresTx(conn, pipeline))
                    await conn.execute("COMMIT")
            except Exception:
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    with contextlib.suppress(psycopg.Error):
                        await conn.rollback()
                raise
            return result

    def try_now(self, operation: Operation[T]) -> Done[T] | None:
        """Never: every statement is a round trip to the server, awaited on the loop by `run`."""
        return None

    async def event_mark(self) -> int:
        """A counter that grows with every NOTIFY; take it before reading, then wait on it."""
        await self._ready()
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen())
        return self._version

    async def wait_for_events(self, timeout: float, mark: int | None = None) -> None:
        if mark is None:
            mark = await self.event_mark()
        if self._version > mark:
            return
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout)

    def _bump(self) -> None:
        self._version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _listen(self) -> None:
        """One LISTEN connection per process; after a lost connection, reconnect and wake readers."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.location, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._bump()  # anything sent while not listening is read by the woken readers
                    async for _ in conn.notifies():
                        self._bump()
            except psycopg.Error as err:
                log.warning("event listener lost its connection (%s); reconnecting", err)
                await asyncio.sleep(1.0)

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
