"""The shared backend: PostgreSQL through psycopg 3's async pool, for workers and UIs on many hosts.

Every write runs in one transaction on a pooled connection (READ COMMITTED; the queries are
written so that an atomic `INSERT ... ON CONFLICT` or a conditional `UPDATE` arbitrates races),
pipelined so that statements nobody waits on share a round trip (`PostgresTx`);
a read runs its statements in autocommit, which at READ COMMITTED sees what a transaction would.
New ui_events rows are announced with NOTIFY, and the UI's stream LISTENs instead of polling.

The server may restart, fail over or drop off the network while processes that use it run on:
every operation waits for it at most DATABASE_WAIT_SECONDS (a connection, then the answer; a
stalled network never hangs a worker), then fails as `StoreUnavailable` in one line; a connection
the server hung up on is dropped when it is taken from the pool, not found dead by the statement
sent on it; the pool and the LISTEN connection connect again by themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from config.database_location import database_wait_seconds
from storage.backend import STORE_NAMES, Component, Dialect, Done, Operation, StoreUnavailable, T
from storage.migrations import migrate

log = logging.getLogger(__name__)
CHANNEL = "ui_events"
# Two advisory lock keys: one for schema upgrades, one that orders event ids by commit.
SCHEMA_LOCK = 72_610_001
EVENTS_LOCK = 72_610_002
POOL_SIZE = 10
# A connection attempt to a server that does not answer gives up after this (libpq would wait two
# minutes), unless the URL says `connect_timeout`; the pool then tries again.
CONNECT_TIMEOUT_SECONDS = 5
# The pool's own reconnection backs off (1 s, 2 s, 4 s ... up to minutes) and wakes for nobody: past
# this it gives up, and the next operation that finds no connection asks for one at once. So a
# server back after a long outage is used again at the next operation, not at the next back-off.
RECONNECT_GIVE_UP_SECONDS = 2.0
Connection = psycopg.AsyncConnection[dict[str, Any]]


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
    def __init__(
        self, url: str, component: Component, pool_size: int = POOL_SIZE, wait_seconds: float | None = None
    ) -> None:
        self.location = url
        self._component: Component = component
        self._pool_size = pool_size
        self._wait = wait_seconds if wait_seconds is not None else database_wait_seconds()
        self._options = _connect_options(url, self._wait)
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
                    timeout=self._wait,
                    reconnect_timeout=RECONNECT_GIVE_UP_SECONDS,
                    # Every statement prepared (parsed and planned once per connection) on its
                    # first run, not its sixth: planning costs more than running most of these.
                    kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0, **self._options},
                )
                try:
                    await pool.open()  # the first connection is awaited below, as any operation's is
                    async with self._connection(pool) as conn, conn.transaction():
                        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                        await migrate(PostgresTx(conn), self._component, datetime.now(UTC).isoformat())
                except BaseException:
                    await pool.close(timeout=1.0)  # else its workers go on connecting in the background
                    raise
                self._pool = pool
        return self._pool

    @contextlib.asynccontextmanager
    async def _connection(self, pool: AsyncConnectionPool[Connection]) -> AsyncIterator[Connection]:
        """A pooled connection the server has not hung up on. After a restart every idle connection
        of the pool is dead: each is dropped here, at once, instead of failing the statement sent
        on it (and the operation with it) one by one."""
        for _ in range(self._pool_size):
            conn = await pool.getconn()
            if not _hung_up(conn):
                break
            await conn.close()
            await pool.putconn(conn)  # a closed connection is discarded, and the pool makes another
        else:
            conn = await pool.getconn()
        try:
            yield conn
        finally:
            await pool.putconn(conn)

    @contextlib.asynccontextmanager
    async def _waiting(self) -> AsyncIterator[None]:
        """At most DATABASE_WAIT_SECONDS for the server; a lost or refused connection, or no answer,
        becomes StoreUnavailable (other errors, such as a constraint violated, pass as they are)."""
        try:
            async with asyncio.timeout(self._wait):
                yield
        except (psycopg.OperationalError, PoolTimeout, TimeoutError) as err:
            if isinstance(err, psycopg.OperationalError) and not _connection_lost(err):
                raise
            raise StoreUnavailable(self._unavailable(err)) from err

    def _unavailable(self, err: BaseException) -> str:
        if isinstance(err, (TimeoutError, PoolTimeout)):
            why = f"no answer within {self._wait:g}s (DATABASE_WAIT_SECONDS)"
        else:
            why = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return f"the {STORE_NAMES[self._component]} at {_where(self.location)} is unreachable: {why}"

    async def run(self, operation: Operation[T], *, write: bool = True) -> T:
        """write=False runs the statements in autocommit, each its own transaction: a read, or
        statements each atomic on its own (a decision's claim), saving BEGIN and COMMIT.
        Raises StoreUnavailable when the server cannot be reached or does not answer in time."""
        async with self._waiting():
            return await self._run(operation, write)

    async def _run(self, operation: Operation[T], write: bool) -> T:
        pool = await self._ready()
        if not write:
            # A read needs no BEGIN and COMMIT: at READ COMMITTED each statement takes its own
            # snapshot inside a transaction too, so autocommit reads see the same and save two round trips.
            async with self._connection(pool) as conn:
                return await operation(PostgresTx(conn))
        async with self._connection(pool) as conn:
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
        async with self._waiting():
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
                connect = psycopg.AsyncConnection.connect(self.location, autocommit=True, **self._options)
                async with await connect as conn:
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


def _connect_options(url: str, wait: float) -> dict[str, Any]:
    """connect_timeout, unless the URL sets it: no longer than the operation may wait."""
    if "connect_timeout" in conninfo_to_dict(url):
        return {}
    return {"connect_timeout": max(2, min(CONNECT_TIMEOUT_SECONDS, round(wait)))}


def _where(url: str) -> str:
    """host:port/database, without the user or password the URL may hold."""
    params = conninfo_to_dict(url)
    return f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}/{params.get('dbname') or ''}"


def _hung_up(conn: Connection) -> bool:
    """Whether an idle connection has something to read: the server writes to one that waits in
    the pool to say it is closing it (a shutdown's reason, then the end of the stream), and a reset
    link reads the same. Now and then it is a notice instead: a working connection is then replaced."""
    poller = select.poll()
    try:
        poller.register(conn.fileno(), select.POLLIN)
    except (psycopg.Error, OSError, ValueError):
        return True
    return bool(poller.poll(0))


def _connection_lost(err: psycopg.OperationalError) -> bool:
    """The link failed, not the statement: no SQLSTATE (refused, reset, closed), a connection
    exception (08...), or the server shutting down or starting up (57P01-57P03)."""
    state = err.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")
