"""The SQLite file: readers on a fresh or half-created file see an empty schema, not an error; a
file written only on the caller's thread still checkpoints its WAL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from activities.ledger import Ledger
from core.tool_run_model import ToolResult
from storage.db import connect_reader, connect_writer
from storage.store import ProjectionStore


async def test_reader_on_a_missing_file_reads_empty(tmp_path: Path) -> None:
    store = ProjectionStore(tmp_path / "fresh" / "approvals.db")
    assert (await store.conversations()).items == [] and (await store.approvals()).items == []
    await store.close()


async def test_reader_on_a_file_without_the_schema_adds_it(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    sqlite3.connect(path).close()  # what a writer leaves between creating the file and its schema
    store = ProjectionStore(f"sqlite://{path}")
    assert (await store.approvals("all")).items == []
    await store.close()


def test_reader_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "approvals.db"
    connect_writer(path).close()
    conn = connect_reader(path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM ui_conversations")


async def test_a_ledger_written_only_at_once_keeps_its_wal_bounded(tmp_path: Path) -> None:
    """A worker's ledger is claimed and finished on the caller's thread (nothing else writes it):
    those commits checkpoint as any writer's do, so the WAL starts over instead of growing with
    every tool run (6,000 runs of a 2 KB result would leave it at about 150 MB)."""
    location = tmp_path / "ledger.db"
    ledger = Ledger(location)
    assert (await ledger.begin("perm_c_warm", "run_shell", 1)).verdict == "run"  # opens the file
    result = ToolResult(content="x" * 2000)
    for n in range(6000):
        assert ledger.begin_at_once(f"perm_c_call_{n}", "run_shell", 1) is not None
        await ledger.finish(f"perm_c_call_{n}", result)
    wal_bytes = location.with_name("ledger.db-wal").stat().st_size
    assert wal_bytes < 16 * 2**20, f"the WAL grew to {wal_bytes} bytes"
    assert await ledger.state_of("perm_c_call_5999") == "finished"
    await ledger.close()
