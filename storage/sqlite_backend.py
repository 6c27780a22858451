"""The embedded backend: a SQLite file, every operation on a worker thread so no loop blocks."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

from storage.backend import STORE_NAMES, Component, Done, Operation, StoreFull, T
from storage.db import SqliteTx, Writer, connect_reader, drive
from storage.sqlite_wakeup import WalWatch

# The UI's event stream looks again this often when no inotify watch can tell it a commit happened.
POLL_INTERVAL = 0.25


class SqliteBackend:
    def __init__(self, path: Path, component: Component) -> None:
        self.path = path
        self.location = str(path)
        self._component: Component = component
        self._writer = Writer(path, component)
        self._at_once = Writer(path, component, waits=False)  # for try_now, on the caller's thread
        self._watch: WalWatch | None = None
        self._watching = False

    async def run(self, operation: Operation[T], *, write: bool = True) -> T:
        return await asyncio.to_thread(self._run, operation, write)

    def try_now(self, operation: Operation[T]) -> Done[T] | None:
        if not self._writer.opened:
            return None  # the file is made (and its schema checked) by `run`'s writer first
        try:
            with self._at_once.transaction() as conn:
                done: Done[T] = Done(drive(operation(SqliteTx(conn))))  # type: ignore[arg-type]
        except sqlite3.OperationalError:
            # Busy (the transaction never began), or a file replaced under it: `run` does it all
            # again, or says what is wrong. A connection left inside a transaction is closed,
            # which rolls it back; a busy one is kept for the next write.
            self._at_once.close_if_in_transaction()
            return None
        return done

    def _run(self, operation: Operation[T], write: bool) -> T:
        try:
            return self._run_on_disk(operation, write)
        except sqlite3.OperationalError as err:
            refused = no_room(err, self._component, self.path)
            if refused is None:
                raise
            raise refused from err

    def _run_on_disk(self, operation: Operation[T], write: bool) -> T:
        if write or self._component != "projection":
            with self._writer.transaction() as conn:
                return drive(operation(SqliteTx(conn)))  # type: ignore[arg-type]
        # A reader may write too: the WAL's index, and the schema of a file that lacks it.
        conn = connect_reader(self.path)
        try:
            return drive(operation(SqliteTx(conn)))  # type: ignore[arg-type]
        finally:
            conn.close()

    async def event_mark(self) -> int:
        """How many commits the WAL watch has seen (started by the first reader that asks)."""
        if self._watch is None:
            self._watch = WalWatch(self.path)
            self._watching = self._watch.start()
        return self._watch.version

    async def wait_for_events(self, timeout: float, mark: int | None = None) -> None:
        if mark is None:
            mark = await self.event_mark()
        watch = self._watch
        if watch is None or not self._watching or watch.loop is not asyncio.get_running_loop():
            await asyncio.sleep(min(timeout, POLL_INTERVAL))
            return
        if watch.version > mark:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.changed.wait(), timeout)

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.stop()
        await asyncio.to_thread(self._writer.close)
        self._at_once.close()


def no_room(err: sqlite3.OperationalError, component: Component, path: Path) -> StoreFull | None:
    """The file could not be written for want of room: SQLite says "full" for a disk with no space
    left, and "disk I/O error" for a write the system refused otherwise (a file size limit, a quota).
    Either way the transaction was rolled back whole. None for any other error."""
    code = getattr(err, "sqlite_errorcode", 0) & 0xFF
    if code == sqlite3.SQLITE_FULL:
        why = "its disk is full"
    elif code == sqlite3.SQLITE_IOERR:
        why = f"its disk refused a write ({err}: full, over a size limit or failing)"
    else:
        return None
    return StoreFull(f"the {STORE_NAMES[component]} at {path} cannot be written: {why}")
