"""PostgreSQL writes are pipelined: what nobody waits on shares one round trip, and a write that
fails part-way still leaves nothing behind and a connection that works.

Round trips are counted on the wire, in libpq's trace of the one pooled connection.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from psycopg import pq

from core.projection_model import ApprovalResolvedProjection, ProjectionEvent
from storage import stream_events, writes
from storage.backend import Operation, StoreUnavailable, Tx
from storage.postgres_backend import PostgresBackend, PostgresTx
from tests.storage.test_store import NOW, asked, conversation
from tests.support.postgres import PostgresServer


@pytest.fixture
async def backend(postgres: PostgresServer) -> AsyncIterator[PostgresBackend]:
    """One connection, so the traced connection is the one every write uses."""
    opened = PostgresBackend(postgres.new_database(), "projection", pool_size=1)
    yield opened
    await opened.close()


def waits(trace: str) -> int:
    """How many times the client waited for the server: each Sync it sent (the extended protocol,
    every statement here) and each simple Query (psycopg's BEGIN and COMMIT outside a pipeline)."""
    messages = [line.split("\t") for line in Path(trace).read_text().splitlines()]
    return sum(1 for message in messages if message[0] == "F" and message[2:3] in (["Sync"], ["Query"]))


async def round_trips(backend: PostgresBackend, operation: Operation[object]) -> int:
    pool = await backend._ready()
    with tempfile.NamedTemporaryFile("w+", suffix=".trace") as trace:
        async with pool.connection() as conn:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            await backend.run(operation)
        finally:
            async with pool.connection() as conn:
                conn.pgconn.untrace()
        return waits(trace.name)


def resolved() -> ApprovalResolvedProjection:
    request = asked()
    return ApprovalResolvedProjection(
        approval=request.approval.model_copy(update={"resolution": "allow", "decided_by": "ana", "resolved_at": NOW}),
        conversation=conversation("c", "running", 2, "permission.resolved"),
    )


async def read(backend: PostgresBackend, sql: str) -> list[dict[str, object]]:
    return await backend.run(lambda tx: tx.fetchall(sql), write=False)


async def test_a_tools_resolution_write_is_one_round_trip(backend: PostgresBackend) -> None:
    """The write a tool makes beside its run: the pending row, the conversation, its event (with the
    event lock and NOTIFY), the decision and its facts: seven statements between BEGIN and COMMIT."""
    await backend.run(lambda tx: writes.write_approval_requested(tx, asked()))
    payload = resolved()

    assert await round_trips(backend, lambda tx: writes.write_approval_resolved(tx, payload)) == 1

    assert await read(backend, "SELECT decision, decided_by FROM ui_pending_approvals") == [
        {"decision": "allow", "decided_by": "ana"}
    ]
    assert await read(backend, "SELECT turn_status FROM ui_conversations") == [{"turn_status": "running"}]
    assert [row["event_key"] for row in await read(backend, "SELECT event_key FROM ui_events ORDER BY event_id")] == [
        "c:call_1:permission.request",
        "c:permission.resolved",
    ]


async def test_a_streamed_piece_and_a_turns_status_are_one_round_trip_each(backend: PostgresBackend) -> None:
    piece = ProjectionEvent(
        event_key="c:piece:1", event_type="message.delta", conversation_id="c", payload={"text": "hi"}
    )
    status = resolved().conversation

    assert await round_trips(backend, lambda tx: stream_events.append_event(tx, piece)) == 1
    assert await round_trips(backend, lambda tx: writes.write_conversation(tx, status)) == 1

    events = await read(backend, "SELECT event_key FROM ui_events ORDER BY event_id")
    assert [row["event_key"] for row in events] == ["c:piece:1", "c:permission.resolved"]
    assert await read(backend, "SELECT turn_status FROM ui_conversations") == [{"turn_status": "running"}]


async def test_a_count_the_write_reads_is_still_right(backend: PostgresBackend) -> None:
    """`execute` waits for its statement's answer inside the pipeline: the first request is new,
    the same one again is not."""
    first = await backend.run(lambda tx: writes.write_approval_requested(tx, asked()))
    again = await backend.run(lambda tx: writes.write_approval_requested(tx, asked()))
    assert (first, again) == (True, False)


async def test_a_statement_failing_part_way_leaves_nothing_and_the_connection_works(backend: PostgresBackend) -> None:
    await backend.run(lambda tx: writes.write_approval_requested(tx, asked()))

    async def duplicate_in_the_middle(tx: Tx) -> None:
        await tx.send("INSERT INTO ui_session_people (session_hash, name) VALUES ('s1', 'before')")
        await tx.send("INSERT INTO ui_session_people (session_hash, name) VALUES ('s1', 'again')")
        await tx.send("INSERT INTO ui_session_people (session_hash, name) VALUES ('s2', 'after')")

    for _ in range(2):  # twice: the statements prepared in the failed write still run
        with pytest.raises(psycopg.errors.UniqueViolation):
            await backend.run(duplicate_in_the_middle)
    assert await read(backend, "SELECT name FROM ui_session_people") == []

    async def fails_after_sending(tx: Tx) -> None:
        await tx.send("INSERT INTO ui_session_people (session_hash, name) VALUES ('s3', 'sent')")
        raise RuntimeError("the operation failed after its statement was queued")

    with pytest.raises(RuntimeError):
        await backend.run(fails_after_sending)
    assert await read(backend, "SELECT name FROM ui_session_people") == []

    # The one connection is idle again and takes the next write.
    assert await round_trips(backend, lambda tx: writes.write_approval_resolved(tx, resolved())) == 1
    assert await read(backend, "SELECT decision FROM ui_pending_approvals") == [{"decision": "allow"}]
    pool = await backend._ready()
    async with pool.connection() as conn:
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE


async def test_the_same_write_unpipelined_waits_for_every_statement(backend: PostgresBackend) -> None:
    """The counter itself, on the write above run statement by statement in a plain transaction
    (as every write ran before): BEGIN, seven statements and COMMIT, each waited for."""
    await backend.run(lambda tx: writes.write_approval_requested(tx, asked()))
    payload = resolved()
    await backend.run(lambda tx: writes.write_approval_resolved(tx, payload))  # every statement prepared
    pool = await backend._ready()
    with tempfile.NamedTemporaryFile("w+", suffix=".trace") as trace:
        async with pool.connection() as conn:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            async with conn.transaction():
                await writes.write_approval_resolved(PostgresTx(conn), payload)
            conn.pgconn.untrace()
        assert waits(trace.name) == 9


async def test_a_connection_lost_under_a_write_fails_that_write_only(backend: PostgresBackend) -> None:
    """The server ends the pool's one connection (a restart, a failover). Ended while it waits in
    the pool, it is dropped before anything is sent on it, and the write goes through on a new one;
    ended under a write, that write raises StoreUnavailable, and the next goes through."""

    async def remember(tx: Tx, name: str) -> None:
        await tx.send("INSERT INTO ui_session_people (session_hash, name) VALUES (?, ?)", (name, name))

    async def pid() -> object:
        found = await backend.run(lambda tx: tx.fetchone("SELECT pg_backend_pid() AS pid"), write=False)
        assert found is not None
        return found["pid"]

    def terminate(pid: object) -> None:
        with psycopg.connect(backend.location, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))  # returns once it has ended

    await backend.run(lambda tx: remember(tx, "before"))
    terminate(await pid())
    await backend.run(lambda tx: remember(tx, "idle"))

    async def lost(tx: Tx) -> None:
        await remember(tx, "lost")
        await tx.execute("SELECT pg_sleep(10)")

    def sleeping() -> object:
        with psycopg.connect(backend.location, autocommit=True) as other:
            found = other.execute(
                "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10)' AND pid <> pg_backend_pid()"
            ).fetchone()
        return None if found is None else found[0]

    writing = asyncio.ensure_future(backend.run(lost))
    while (under_write := sleeping()) is None:
        await asyncio.sleep(0.05)
    terminate(under_write)
    with pytest.raises(StoreUnavailable, match="is unreachable: "):
        await writing
    await backend.run(lambda tx: remember(tx, "after"))
    assert await read(backend, "SELECT name FROM ui_session_people ORDER BY name") == [
        {"name": "after"},
        {"name": "before"},
        {"name": "idle"},
    ]
