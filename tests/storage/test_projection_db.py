"""The SQLite file: readers on a fresh or half-created file see an empty schema, not an error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

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
