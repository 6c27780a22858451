"""`starter.py stats`: the same figures as the analytics page, from a seeded audit, as JSON and
as text, and only for the period asked."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

from cli.main import main
from config.settings import Settings
from core.stats import percentile
from tests.observability.seeding import START, Decided, seed_decided


def test_nearest_rank_percentiles() -> None:
    assert percentile([], 0.5) is None
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.0
    assert percentile([float(n) for n in range(1, 11)], 0.9) == 9.0


async def test_stats_as_json_and_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("APPROVALS_DB", str(tmp_path / "approvals.db"))
    old = START - timedelta(days=30)
    calls = [
        Decided("write_file", {"path": "a.txt", "content": "c"}, "allow", 4.0),
        Decided("write_file", {"path": "b.txt", "content": "c"}, "deny", 10.0, by="bob", door="cli"),
        Decided("run_shell", {"command": "ls"}, "expired", 600.0),
        Decided("run_shell", {"command": "ls"}, "allow", 100.0, at=old),
    ]
    await seed_decided(Settings(approvals_db=tmp_path / "approvals.db"), calls)

    assert await asyncio.to_thread(main, ["stats", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["totals"] == {
        "requests": 4,
        "decided": 3,
        "allowed": 2,
        "approval_rate": 0.667,
        "expired": 1,
        "canceled": 0,
        "escalated": 0,
        "waiting": 0,
        "median_seconds": 10.0,
        "p90_seconds": 100.0,
    }
    [shell, write] = figures["per_tool"]
    assert (shell["tool"], shell["expired"], write["denied"], write["approval_rate"]) == ("run_shell", 1, 1, 0.5)
    since = (START - timedelta(days=1)).isoformat()
    assert await asyncio.to_thread(main, ["stats", "--json", "--since", since]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["requests"] == 3
    assert await asyncio.to_thread(main, ["stats"]) == 0
    text = capsys.readouterr().out
    assert "4 requests: 3 decided (67% approved), 1 expired" in text and "bob" in text and "cli" in text
