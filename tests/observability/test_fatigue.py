"""Fatigue controls: the rule suggested for calls approved every time, quickly (CLI and API, from
a seeded audit), what it leaves asked, that a single denial withdraws it, and the rapid-run
notice recorded in the audit."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

from cli.main import main
from config.settings import Settings
from core.conversation_model import DecisionInput
from core.fatigue import narrowest_pattern, rapid_run
from storage.store import ProjectionStore
from tests.observability.seeding import START, Decided, seed_decided
from tests.support.ui_fixtures import api_client, seed_pending


def notes_calls(count: int = 25) -> list[Decided]:
    return [
        Decided(
            "write_file",
            {"path": f"notes/{n}.txt", "content": f"note {n}"},
            "allow",
            1.0 + n % 3,
            at=START + timedelta(minutes=n),
        )
        for n in range(count)
    ]


OTHERS = [
    Decided("write_file", {"path": "report.md", "content": "r"}, "allow", 2.0),
    Decided("write_file", {"path": "src/app.py", "content": "x"}, "allow", 40.0),
    Decided("run_shell", {"command": "rm -rf build"}, "deny", 9.0),
]


@pytest.fixture
def audit_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("APPROVALS_DB", str(tmp_path / "approvals.db"))
    return Settings(approvals_db=tmp_path / "approvals.db", workspace_dir=tmp_path / "workspace")


async def cli(*argv: str) -> int:
    """The CLI in-process (it runs its own event loop, so on a thread of its own)."""
    return await asyncio.to_thread(main, list(argv))


async def suggest(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    assert await cli("rules", "suggest", "--json", *extra) == 0
    found: list[dict] = json.loads(capsys.readouterr().out)
    return found


async def test_twenty_five_approved_notes_writes_suggest_exactly_notes_glob(
    audit_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed_decided(audit_settings, notes_calls() + OTHERS)

    [found] = await suggest(capsys)
    assert (found["rule"], found["covers"]) == ("write_file(notes/**)", 25)
    assert found["not_covered"] == 2 and set(found["not_covered_examples"]) == {"report.md", "src/app.py"}
    assert found["median_seconds"] == 2.0
    async with api_client(audit_settings, None) as http:
        assert (await http.get("/api/rules/suggest")).json() == [found]
        page = (await http.get("/analytics")).text
    assert "<td>write_file(notes/**)</td><td>25</td>" in page  # the page shows it to copy
    assert await cli("rules", "suggest") == 0
    shown = capsys.readouterr().out
    assert "write_file(notes/**)" in shown and "Nothing was changed" in shown
    assert audit_settings.load_policy().allow == Settings().load_policy().allow  # nothing was applied


async def test_one_denial_withdraws_the_suggestion(
    audit_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    denied = Decided("write_file", {"path": "notes/secret.txt", "content": "s"}, "deny", 1.0)
    await seed_decided(audit_settings, [*notes_calls(), denied])
    assert await suggest(capsys) == []


async def test_slow_decisions_are_read_not_rubber_stamped(
    audit_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = [Decided(call.tool, call.arguments, "allow", 45.0, at=call.at) for call in notes_calls()]
    await seed_decided(audit_settings, slow)
    assert await suggest(capsys) == []
    assert [item["rule"] for item in await suggest(capsys, "--max-median", "60")] == ["write_file(notes/**)"]


async def test_nineteen_are_not_enough(audit_settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    await seed_decided(audit_settings, notes_calls(19))
    assert await suggest(capsys) == []
    assert [item["covers"] for item in await suggest(capsys, "--min-count", "19")] == [19]


def test_narrowest_patterns() -> None:
    assert narrowest_pattern("run_shell", ["git status", "git status -s", "git status --short"]) == "git status*"
    assert narrowest_pattern("write_file", ["notes/a/1.txt", "notes/b/2.txt"]) == "notes/**"
    assert narrowest_pattern("write_file", ["notes/a/1.txt", "notes/a/2.txt"]) == "notes/a/**"
    assert narrowest_pattern("run_shell", ["make test"]) == "make test"


def test_a_rapid_run_is_each_approval_within_seconds_of_the_last() -> None:
    times = [START + timedelta(seconds=2 * n) for n in range(5)]
    assert rapid_run(times, 5, 2.0) and not rapid_run(times, 5, 1.9) and not rapid_run(times, 6, 2.0)
    assert rapid_run([START, START + timedelta(minutes=5), *times[1:]], 4, 2.0)


async def test_a_rapid_run_of_approvals_is_noticed_once_and_kept_in_the_audit(audit_settings: Settings) -> None:
    ids = [await seed_pending(audit_settings, "conv-rapid", f"call_{n}") for n in range(4)]
    store = ProjectionStore(audit_settings.approvals_db)
    try:
        notices = []
        for request_id in ids:
            await store.claim_decision(DecisionInput(request_id=request_id, decision="allow", decided_by="bob"))
            notices.append(await store.note_rapid_run("bob", 3, 30.0))
        assert [notice is not None for notice in notices] == [False, False, True, False]
        assert await store.note_rapid_run("carol", 3, 30.0) is None
        trail = await store.audit_trail()
    finally:
        await store.close()
    [kept] = [row for row in trail if row["kind"] == "notice"]
    assert (kept["principal"], kept["approvals"]) == ("bob", 3)
    assert await cli("audit") == 0
