"""The projection store and the ledger on both backends: idempotent versioned writes, first claim
wins across processes, at-most-once ledger claims, keyset pages, versioned migrations."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from activities.ledger import Ledger
from core.conversation_model import ApprovalRecord, DecisionInput
from core.projection_model import (
    ApprovalRequestedProjection,
    ApprovalResolvedProjection,
    ConversationProjection,
    ProjectionEvent,
)
from core.refusals import ClaimedDecision, DecisionRefused
from core.tool_run_model import ToolResult
from storage.backend import StoreUnavailable
from storage.migrations import latest_version
from storage.reader import BadCursor
from storage.store import ProjectionStore
from tests.support.helpers import Db, execute, rows
from tests.support.postgres import on_both_backends

pytestmark = on_both_backends
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(cid: str = "c", call: str = "call_1", at: datetime = NOW) -> ApprovalRecord:
    return ApprovalRecord(
        request_id=f"perm_{cid}_{call}",
        conversation_id=cid,
        turn_id="turn_1",
        tool_call_id=call,
        tool_name="write_file",
        permission_type="write",
        arguments={"path": "a"},
        created_at=at,
        expires_at=at,
    )


def conversation(cid: str, status: str, version: int, event: str = "", at: datetime = NOW) -> ConversationProjection:
    events = [ProjectionEvent(event_key=f"{cid}:{event}", event_type=event, conversation_id=cid)] if event else []
    return ConversationProjection(
        conversation_id=cid,
        turn_status=status,  # type: ignore[arg-type]
        pending_count=1 if status == "awaiting_approval" else 0,
        updated_at=at,
        version=version,
        events=events,
    )


def asked(cid: str = "c", call: str = "call_1", version: int = 1, at: datetime = NOW) -> ApprovalRequestedProjection:
    return ApprovalRequestedProjection(
        approval=record(cid, call, at),
        kv_snapshot={},
        conversation=conversation(cid, "awaiting_approval", version, f"{call}:permission.request", at),
    )


def event_keys(db: Db) -> list[str]:
    return [r["event_key"] for r in rows(db, "SELECT event_key FROM ui_events ORDER BY event_id")]


async def test_replayed_and_out_of_order_writes_change_nothing(database: Db) -> None:
    """What a retried or replayed projection activity does: the same payloads again, an older one late."""
    store = ProjectionStore(database)
    request = asked()
    resolved = ApprovalResolvedProjection(
        approval=request.approval.model_copy(update={"resolution": "deny", "decided_by": "bob", "resolved_at": NOW}),
        conversation=conversation("c", "running", 2, "permission.resolved"),
    )
    for _ in range(3):
        await store.project_approval_requested(request)
        await store.project_approval_resolved(resolved)
    await store.project_conversation(request.conversation)  # an old write arriving late loses
    await store.close()

    [row] = rows(database, "SELECT decision, decided_by FROM ui_pending_approvals")
    assert row == {"decision": "deny", "decided_by": "bob"}
    assert rows(database, "SELECT turn_status, pending_count FROM ui_conversations") == [
        {"turn_status": "running", "pending_count": 0}
    ]
    assert event_keys(database) == ["c:call_1:permission.request", "c:permission.resolved"]


async def test_of_many_concurrent_deciders_in_separate_processes_exactly_one_wins(database: Db) -> None:
    """Each decider has its own store (its own connections), as separate UI and CLI processes do."""
    writer = ProjectionStore(database)
    await writer.project_approval_requested(asked())
    deciders = [ProjectionStore(database) for _ in range(8)]

    async def decide(store: ProjectionStore, who: int) -> str:
        decision = DecisionInput(request_id="perm_c_call_1", decision="allow", decided_by=f"person-{who}")
        try:
            await store.claim_decision(decision)
        except DecisionRefused as refused:
            return refused.error_type
        return "won"

    outcomes = await asyncio.gather(*(decide(store, i) for i, store in enumerate(deciders)))
    for store in [writer, *deciders]:
        await store.close()
    assert sorted(outcomes) == ["ApprovalAlreadyResolved"] * 7 + ["won"]
    [claim] = rows(database, "SELECT decided_by FROM ui_decision_claims")
    assert claim["decided_by"] == f"person-{outcomes.index('won')}"


async def test_unknown_and_resolved_requests_are_refused_and_a_released_claim_can_be_made_again(database: Db) -> None:
    store = ProjectionStore(database)
    with pytest.raises(DecisionRefused) as unknown:
        await store.claim_decision(DecisionInput(request_id="perm_nobody_call_1", decision="allow"))
    assert unknown.value.error_type == "UnknownApproval"
    await store.project_approval_requested(asked())
    first = DecisionInput(request_id="perm_c_call_1", decision="deny", decided_by="ann")
    await store.claim_decision(first)
    await store.release_claim("perm_c_call_1")  # its signal could not be sent
    claimed = await store.claim_decision(first.model_copy(update={"decided_by": "bob"}))
    assert claimed.conversation_id == "c"
    resolved = ApprovalResolvedProjection(
        approval=record().model_copy(update={"resolution": "deny", "decided_by": "bob", "resolved_at": NOW}),
        conversation=conversation("c", "idle", 2),
    )
    await store.project_approval_resolved(resolved)
    with pytest.raises(DecisionRefused, match="already resolved: deny by bob"):
        await store.claim_decision(DecisionInput(request_id="perm_c_call_1", decision="allow"))
    await store.close()


def approval_of(person: str) -> DecisionInput:
    return DecisionInput(request_id="perm_c_call_1", decision="allow", decided_by=person, principal=person)


async def two_person_request(store: ProjectionStore) -> None:
    await store.project_approval_requested(
        asked().model_copy(update={"approval": record().model_copy(update={"required": 2})})
    )


async def test_an_approval_of_several_that_could_not_be_delivered_is_released_alone(database: Db) -> None:
    """One person's approval of a two-person request holds no claim; undoing it (its signal could not
    be sent) takes back that approval only, so the person can approve again, and leaves the claim
    the last approver's decision made."""
    store = ProjectionStore(database)
    await two_person_request(store)
    ann = await store.claim_decision(approval_of("ann"))
    assert ann.partial
    await store.release(ann)
    again = await store.claim_decision(approval_of("ann"))  # before, refused: "ann already approved"
    assert again.partial
    bob = await store.claim_decision(approval_of("bob"))
    assert not bob.partial
    await store.release(again)
    assert [r["principal"] for r in rows(database, "SELECT principal FROM ui_partial_approvals")] == ["bob"]
    assert [r["decided_by"] for r in rows(database, "SELECT decided_by FROM ui_decision_claims")] == ["bob"]
    await store.close()


async def test_an_approval_of_several_whose_answer_was_lost_is_known_for_its_own(
    database: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approval is recorded, and the answer is lost with the connection: the store's second try
    finds this person's approval and takes it for its own, to be delivered. A second approval by the
    same person, apart, is refused, carrying the first to send again (the workflow applies it once)."""
    store = ProjectionStore(database)
    await two_person_request(store)
    real = store._claim_decision

    async def answer_lost(decision: DecisionInput) -> ClaimedDecision:
        monkeypatch.setattr(store, "_claim_decision", real)
        await real(decision)
        raise StoreUnavailable("the read model at test is unreachable: connection lost")

    monkeypatch.setattr(store, "_claim_decision", answer_lost)
    claimed = await store.claim_decision(approval_of("ann"))  # before, refused: "ann already approved"
    assert claimed == ClaimedDecision("c", approval_of("ann"), partial=True)
    with pytest.raises(DecisionRefused, match="ann already approved perm_c_call_1; it needs 1 more") as repeated:
        await store.claim_decision(approval_of("ann"))
    assert repeated.value.earlier == claimed
    await store.close()


async def test_ledger_runs_a_tool_at_most_once_across_workers(database: Db) -> None:
    """Attempts on separate ledgers (separate workers): one runs, a finished result is returned,
    and an attempt after a start that never finished is told the outcome is unknown."""
    ledgers = [Ledger(database if isinstance(database, str) else database.with_name("ledger.db")) for _ in range(6)]
    claims = await asyncio.gather(*(ledger.claim("perm_c_call_1", "run_shell", 1) for ledger in ledgers))
    assert [c.verdict for c in claims].count("run") == 6, "a claim alone is not a start: every one may still run"
    starts = await asyncio.gather(*(ledger.start("perm_c_call_1", 1) for ledger in ledgers))
    assert starts.count(True) == 1, "exactly one attempt starts the tool"
    result = ToolResult(content="ran")
    await ledgers[0].finish("perm_c_call_1", result)
    again = await ledgers[1].claim("perm_c_call_1", "run_shell", 2)
    assert (again.verdict, again.result) == ("finished", result)

    await ledgers[0].claim("perm_c_call_2", "run_shell", 1)
    assert await ledgers[0].start("perm_c_call_2", 1)
    retried = await ledgers[2].claim("perm_c_call_2", "run_shell", 2)  # the first worker died mid-tool
    assert retried.verdict == "unknown" and await ledgers[2].state_of("perm_c_call_2") == "unknown"
    for ledger in ledgers:
        await ledger.close()


async def test_a_claim_whose_tool_never_started_runs_on_the_next_attempt(database: Db) -> None:
    """The projection write between claim and start failed: the retry must run it, not call it unknown."""
    ledger = Ledger(database if isinstance(database, str) else database.with_name("ledger.db"))
    assert (await ledger.claim("perm_c_call_1", "write_file", 1)).verdict == "run"
    # attempt 1 fails here, before start
    assert (await ledger.claim("perm_c_call_1", "write_file", 2)).verdict == "run"
    assert not await ledger.start("perm_c_call_1", 1), "the first attempt no longer owns it"
    assert await ledger.start("perm_c_call_1", 2)
    await ledger.close()


async def test_begin_claims_and_starts_in_one_step_for_exactly_one_attempt(database: Db) -> None:
    """Concurrent attempts on separate ledgers: one begins the tool, the others learn it started;
    a claim left by an attempt that never started is taken over; a finished result is returned."""
    ledgers = [Ledger(database if isinstance(database, str) else database.with_name("ledger.db")) for _ in range(6)]
    begun = await asyncio.gather(
        *(ledger.begin("perm_c_call_1", "run_shell", n + 1) for n, ledger in enumerate(ledgers))
    )
    assert sorted(c.verdict for c in begun) == ["run"] + ["unknown"] * 5
    assert await ledgers[0].state_of("perm_c_call_1") == "unknown", "a later attempt saw it started"

    await ledgers[0].claim("perm_c_call_2", "write_file", 1)  # an attempt that died before its start
    assert (await ledgers[1].begin("perm_c_call_2", "write_file", 2)).verdict == "run"
    assert not await ledgers[0].start("perm_c_call_2", 1), "the first attempt no longer owns it"
    result = ToolResult(content="wrote")
    await ledgers[1].finish("perm_c_call_2", result)
    again = await ledgers[2].begin("perm_c_call_2", "write_file", 3)
    assert (again.verdict, again.result) == ("finished", result)
    for ledger in ledgers:
        await ledger.close()


async def test_a_claim_taken_at_once_is_the_first_attempts_and_a_busy_file_is_left_to_begin(database: Db) -> None:
    """On SQLite the first attempt's claim is taken on the caller's thread; a file another writer
    holds is not waited for (None, nothing written) and `begin` then takes it. A later attempt and
    PostgreSQL always go through `begin`."""
    location = database if isinstance(database, str) else database.with_name("ledger.db")
    ledger, other = Ledger(location), Ledger(location)
    assert ledger.begin_at_once("perm_c_call_0", "run_shell", 1) is None, "nothing opened the store yet"
    assert (await ledger.begin("perm_c_call_0", "run_shell", 1)).verdict == "run"  # opens it
    first = ledger.begin_at_once("perm_c_call_1", "run_shell", 1)
    if isinstance(database, str):  # PostgreSQL: every claim is a round trip, awaited by `begin`
        assert first is None
        assert await ledger.state_of("perm_c_call_1") is None
    else:
        assert first is not None and first.verdict == "run"
        assert await other.state_of("perm_c_call_1") == "started"
        assert ledger.begin_at_once("perm_c_call_1", "run_shell", 2) is None, "a later attempt settles in begin"
        assert (await other.begin("perm_c_call_1", "run_shell", 2)).verdict == "unknown"
        holder = sqlite3.connect(location, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writing the ledger
        try:
            assert ledger.begin_at_once("perm_c_call_2", "run_shell", 1) is None, "a busy file is not waited for"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert await other.state_of("perm_c_call_2") is None, "nothing was written"
        assert (await ledger.begin("perm_c_call_2", "run_shell", 1)).verdict == "run"
        assert ledger.begin_at_once("perm_c_call_3", "run_shell", 1) is not None, "the next one is at once again"
    await ledger.close()
    await other.close()


async def test_keyset_pages_list_every_row_once_newest_first(database: Db) -> None:
    store = ProjectionStore(database)
    for i in range(23):
        at = NOW + timedelta(seconds=i // 2)  # pairs share a timestamp: the id breaks the tie
        status = "awaiting_approval" if i % 3 == 0 else "idle"
        await store.project_conversation(conversation(f"c{i:02d}", status, 1, at=at))
        if i % 3 == 0:
            await store.project_approval_requested(asked(f"c{i:02d}", version=2, at=at))
    seen, after, pages = [], None, 0
    while True:
        page = await store.conversations(limit=5, after=after)
        seen += [row["conversation_id"] for row in page.items]
        pages += 1
        if page.next is None:
            break
        after = page.next
    everything = [row["conversation_id"] for row in (await store.conversations()).items]
    assert seen == everything and len(seen) == 23 and pages == 5
    assert everything[:3] == ["c22", "c20", "c21"], "newest first; a shared timestamp is ordered by id"

    waiting = await store.conversations(limit=100, status="awaiting_approval")
    assert [r["conversation_id"] for r in waiting.items] == [f"c{i:02d}" for i in range(21, -1, -3)]
    first = await store.approvals("pending", limit=3)
    second = await store.approvals("pending", limit=3, after=first.next)
    assert [r["conversation_id"] for r in first.items + second.items] == [f"c{i:02d}" for i in range(0, 18, 3)]
    with pytest.raises(BadCursor):
        await store.conversations(limit=5, after="not-a-cursor")
    await store.close()


async def test_migrations_are_recorded_and_applied_once(database: Db) -> None:
    for _ in range(2):
        store = ProjectionStore(database)
        await store.latest_event_id()
        await store.close()
    versions = rows(database, "SELECT component, version FROM schema_version ORDER BY version")
    assert versions == [{"component": "projection", "version": v} for v in range(1, latest_version("projection") + 1)]


async def test_an_older_schema_is_upgraded_in_place(database: Db) -> None:
    """A database at version 1 (written by an earlier release) gains the later versions and keeps its rows."""
    store = ProjectionStore(database)
    await store.project_approval_requested(asked())
    await store.close()
    execute(database, "DELETE FROM schema_version WHERE version > 1")
    execute(database, "DROP INDEX ui_conversations_page")
    store = ProjectionStore(database)
    assert [r["request_id"] for r in (await store.approvals()).items] == ["perm_c_call_1"]
    await store.project_conversation(conversation("c", "idle", 9))  # a write upgrades the schema
    await store.close()
    upgraded = {r["version"] for r in rows(database, "SELECT version FROM schema_version")}
    assert upgraded == set(range(1, latest_version("projection") + 1))


async def test_a_waiting_reader_wakes_when_events_arrive(database: Db) -> None:
    reader, writer = ProjectionStore(database), ProjectionStore(database)
    mark = await reader.event_mark()
    before, _ = await reader.events()
    waiting = asyncio.create_task(reader.wait_for_events(30.0, mark))
    await writer.project_conversation(conversation("c", "running", 1, "turn.started"))
    await asyncio.wait_for(waiting, 5.0)
    after, latest = await reader.events()
    assert before == [] and [e["event_type"] for e in after] == ["turn.started"] and latest == after[0]["event_id"]
    for store in (reader, writer):
        await store.close()
