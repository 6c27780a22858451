"""Where the read model and the ledger live, chosen by URL, behind one small async interface.

`APPROVALS_DB` and `LEDGER_DB` name a database: a plain path or `sqlite:///path` (an embedded file,
the default) or `postgresql://...` (a server that workers and UIs on many hosts share). Each query
is written once against `Tx` with `?` placeholders and runs on either backend; a whole operation
runs in one transaction through `Backend.run`, so the callers never see a connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from config.database_location import is_postgres, sqlite_path

T = TypeVar("T")
Component = Literal["projection", "ledger"]
# How an error names each store to a person: what it is, and the variable that places it.
STORE_NAMES: dict[str, str] = {"projection": "read model (APPROVALS_DB)", "ledger": "ledger (LEDGER_DB)"}
Dialect = Literal["sqlite", "postgresql"]


class Tx(Protocol):
    """One transaction. Placeholders are `?`; rows come back as dicts."""

    dialect: Dialect

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; returns the number of rows it changed."""
        ...

    async def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose row count nobody reads. In a PostgreSQL write it is queued and goes
        out with the next statement that needs an answer, or with the commit: a transaction of
        such statements costs one round trip, not one each. An error it raises may surface there."""
        ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None: ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]: ...

    async def append_events(self) -> None:
        """Called before ui_events rows are inserted: event ids must grow in commit order, so a
        reader that follows `event_id > last` never skips a row committed late."""
        ...


Operation = Callable[[Tx], Awaitable[T]]


class StoreFull(RuntimeError):
    """A write its store refused for want of room (a full disk, a file size limit): nothing of it was
    kept, and the same write succeeds once there is room again. Its message names the store, where
    it is and why, in one line for a person."""


class StoreUnavailable(RuntimeError):
    """The database server could not be reached, or did not answer within its wait
    (DATABASE_WAIT_SECONDS): restarted, failed over, or the network to it cut or stalled. When the
    connection was lost while a statement was on its way, that statement may or may not have taken
    effect, so only a write that is safe to repeat (or that can recognise its own earlier try, as
    the ledger's do) may be tried again. Its message names the store and where it is, in one line."""


@dataclass(frozen=True)
class Done(Generic[T]):
    """What an operation returned when `Backend.try_now` ran it."""

    value: T


class Backend(Protocol):
    """A database holding one component's tables (created and upgraded on first use)."""

    location: str

    async def run(self, operation: Operation[T], *, write: bool = True) -> T:
        """Run operation(tx) in one transaction and return its result; nothing here blocks the loop."""
        ...

    def try_now(self, operation: Operation[T]) -> Done[T] | None:
        """Run a short write on the calling thread, in one transaction, when the database takes it
        without waiting (an embedded file no other writer holds); None when it cannot, and nothing
        was written: then call `run`. For a write that something waits on, to spare it the trip to
        a worker thread (see `run_short`)."""
        ...

    async def event_mark(self) -> int:
        """A counter that grows when ui_events rows arrive: take it before reading the log."""
        ...

    async def wait_for_events(self, timeout: float, mark: int | None = None) -> None:
        """Return once rows may have arrived since `mark`, or after timeout (never raises on timeout)."""
        ...

    async def close(self) -> None: ...


def open_backend(location: str | Path, component: Component) -> Backend:
    """The backend for a URL or path; PostgreSQL's driver is imported only when it is used."""
    if is_postgres(location):
        from storage.postgres_backend import PostgresBackend

        return PostgresBackend(str(location), component)
    from storage.sqlite_backend import SqliteBackend

    return SqliteBackend(sqlite_path(location), component)


async def run_autocommit(backend: Backend, operation: Operation[T]) -> T:
    """Run operation(tx) with each statement committing alone on PostgreSQL: no BEGIN and COMMIT,
    two round trips fewer. Only for operations whose statements are each atomic by themselves and
    need no transaction around them (at READ COMMITTED a transaction's reads take no locks either).
    SQLite runs it in one transaction as usual: a local commit costs no round trip."""
    return await backend.run(operation, write=not is_postgres(backend.location))


async def run_short(backend: Backend, operation: Operation[T], *, autocommit: bool = True) -> T:
    """A short write a person's decision waits for (the door's claim, a tool's ledger and marks): on
    the caller's thread when the store takes it at once (an embedded file no other writer holds,
    `Backend.try_now`), else as `run_autocommit` runs it, or in one transaction (`autocommit=False`)
    when its statements must commit together."""
    done = backend.try_now(operation)
    if done is not None:
        return done.value
    if autocommit:
        return await run_autocommit(backend, operation)
    return await backend.run(operation)
