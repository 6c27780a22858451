"""The embedded backend: a SQLite file, every operation on a worker thread so no loop blocks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from storage.backend import Component, Operation, T
from storage.db import SqliteTx, Writer, connect_reader, drive

# The UI's event stream polls the file this often: SQLite has no way to say a row arrived.
POLL_INTERVAL = 0.25


class SqliteBackend:
    def __init__(self, path: Path, component: Component) -> None:
        self.path = path
        self.location = str(path)
        self._component: Component = component
        self._writer = Writer(path, component)

    async def run(self, operation: Operation[T], *, write: bool = True) -> T:
        return await asyncio.to_thread(self._run, operation, write)

    def _run(self, operation: Operation[T], write: bool) -> T:
        if write or self._component != "projection":
            with self._writer.transaction() as conn:
                return drive(operation(SqliteTx(conn)))  # type: ignore[arg-type]
        conn = connect_reader(self.path)
        try:
            return drive(operation(SqliteTx(conn)))  # type: ignore[arg-type]
        finally:
            conn.close()

    async def event_mark(self) -> int:
        return 0

    async def wait_for_events(self, timeout: float, mark: int | None = None) -> None:
        await asyncio.sleep(min(timeout, POLL_INTERVAL))

    async def close(self) -> None:
        await asyncio.to_thread(self._writer.close)
