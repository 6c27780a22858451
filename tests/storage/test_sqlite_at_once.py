"""Writes taken at once on SQLite (Backend.try_now) run no checkpoint on the caller's thread; the
process's writer thread checkpoints the WAL once it has grown, so it stays bounded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from activities.ledger import Ledger
from core.models import ToolResult
from storage import sqlite_backend

THRESHOLD = 64 * 1024


async def test_writes_taken_at_once_keep_the_wal_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_backend, "WAL_CHECKPOINT_BYTES", THRESHOLD)
    ledger = Ledger(tmp_path / "ledger.db")
    await ledger.begin("warm", "run_shell", 1)  # the writer thread opens the file
    wal = tmp_path / "ledger.db-wal"
    sizes = []
    for n in range(600):
        claim = ledger.begin_at_once(f"r{n}", "run_shell", 1)
        assert claim is not None and claim.verdict == "run"
        await ledger.finish(f"r{n}", ToolResult(content="x" * 500))
        await asyncio.sleep(0.001)  # the checkpoint's thread gets its turn
        sizes.append(wal.stat().st_size)
    await ledger.close()
    # Without a checkpoint the WAL would hold every one of the 1,200 commits (several MiB).
    assert max(sizes) < 8 * THRESHOLD, f"the WAL grew to {max(sizes)} bytes"
    assert sizes[-1] < 8 * THRESHOLD


async def test_without_the_checkpoint_the_same_writes_grow_the_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound above is the checkpoint's doing: with it out of reach, the same writes grow the WAL."""
    monkeypatch.setattr(sqlite_backend, "WAL_CHECKPOINT_BYTES", 1 << 40)
    ledger = Ledger(tmp_path / "ledger.db")
    await ledger.begin("warm", "run_shell", 1)
    for n in range(600):
        assert ledger.begin_at_once(f"r{n}", "run_shell", 1) is not None
        await ledger.finish(f"r{n}", ToolResult(content="x" * 500))
    size = (tmp_path / "ledger.db-wal").stat().st_size
    await ledger.close()
    assert size > 8 * THRESHOLD
