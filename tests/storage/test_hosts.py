"""Worker hosts in the projection, on both backends: a tool waiting for a gone host shows on the
conversation's row until the host comes back or the conversation moves (an older write never brings
it back), workers note themselves, and `hosts` counts each host's conversations and waiting tools."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.conversation_model import TurnStatus
from core.host_wait import host_wait_text
from core.hosts import EVENT_HOST_BACK, EVENT_HOST_WAITING, EVENT_MOVED
from core.projection_model import ConversationProjection, ProjectionEvent
from storage.audit import switch_text
from storage.store import ProjectionStore
from tests.support.helpers import Db
from tests.support.postgres import on_both_backends

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def wait_payload(host: str = "pod-a", last_poll: str | None = "2026-03-01T10:02:03+00:00") -> dict[str, Any]:
    return {
        "host": host,
        "task_queue": f"durable-approvals@{host}",
        "since": "2026-03-01T10:02:33+00:00",
        "last_poll": last_poll,
        "moves_at": "2026-03-01T10:04:03+00:00",
    }


def moved_payload(to_host: str = "pod-b", why: str = "host_gone", by: str | None = None) -> dict[str, Any]:
    door = "cli" if by else None
    return {"from_host": "pod-a", "to_host": to_host, "why": why, "by": by, "door": door, "at": NOW.isoformat()}


def projected(
    cid: str, version: int, event: str = "", payload: dict[str, Any] | None = None, status: TurnStatus = "running"
) -> ConversationProjection:
    """The conversation as the workflow writes it, with at most one event (keyed by its version)."""
    events = []
    if event:
        key = f"{cid}:{version}:{event}"
        events = [ProjectionEvent(event_key=key, event_type=event, conversation_id=cid, payload=payload or {})]
    return ConversationProjection(
        conversation_id=cid, turn_status=status, pending_count=0, updated_at=NOW, version=version, events=events
    )


def waiting(cid: str, version: int, host: str = "pod-a") -> ConversationProjection:
    return projected(cid, version, EVENT_HOST_WAITING, wait_payload(host))


async def write(database: Db, *conversations: ConversationProjection) -> None:
    store = ProjectionStore(database)
    try:
        for conv in conversations:
            await store.project_conversation(conv)
    finally:
        await store.close()


async def one_waiting_one_fine(database: Db) -> None:
    """`conv-waits` pinned to pod-a with a tool waiting for it, and `conv-fine` idle: what the UI
    tests show."""
    store = ProjectionStore(database)
    try:
        await store.set_tool_host("conv-waits", "pod-a")
    finally:
        await store.close()
    await write(database, waiting("conv-waits", 2), projected("conv-fine", 1, status="idle"))


def test_the_wait_reads_as_one_line_in_utc() -> None:
    assert host_wait_text(wait_payload()) == "waiting for host pod-a: no worker since 10:02:03; moving at 10:04:03"
    unpolled = {**wait_payload(last_poll=None), "moves_at": "2026-03-01T11:04:03+01:00"}
    assert host_wait_text(unpolled) == "waiting for host pod-a: no worker has polled it; moving at 10:04:03"


@on_both_backends
async def test_a_wait_shows_until_the_move_and_an_older_write_never_brings_it_back(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        await store.set_tool_host("c", "pod-a")
        await store.project_conversation(waiting("c", 2))
        row = await store.conversation("c")
        assert row is not None and (row["tool_host"], row["host_wait"]) == ("pod-a", wait_payload())
        [listed] = (await store.conversations()).items
        assert listed["host_wait"] == wait_payload()

        await store.project_conversation(projected("c", 3, EVENT_MOVED, moved_payload()))
        await store.project_conversation(waiting("c", 2))  # the waiting write, retried late, loses
        await store.project_conversation(projected("c", 4))  # a later status write keeps the host
        row = await store.conversation("c")
        assert row is not None and (row["tool_host"], row["host_wait"]) == ("pod-b", None)
        assert await store.conversations_on_host("pod-b") == ["c"]
        assert await store.conversations_on_host("pod-a") == []
    finally:
        await store.close()


@on_both_backends
async def test_a_host_that_comes_back_or_a_close_ends_the_wait(database: Db) -> None:
    await write(
        database,
        waiting("back", 1),
        projected("back", 2, EVENT_HOST_BACK, {"host": "pod-a"}),
        waiting("closed", 1),
        projected("closed", 2, "conversation.closed", {"by": "ann", "door": "ui", "at": NOW.isoformat()}, "closed"),
        waiting("still", 1),
        projected("still", 2),  # a status write with no host event keeps the wait
    )
    store = ProjectionStore(database)
    try:
        waits = {row["conversation_id"]: row["host_wait"] for row in (await store.conversations()).items}
        assert waits == {"back": None, "closed": None, "still": wait_payload()}
    finally:
        await store.close()


@on_both_backends
async def test_the_tool_host_noted_before_the_first_projection_survives_it(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        await store.set_tool_host("early", "pod-a")
        await store.project_conversation(projected("early", 1, status="awaiting_approval"))
        await store.project_conversation(projected("late", 1, status="idle"))
        await store.set_tool_host("late", "pod-b")
        early, late = await store.conversation("early"), await store.conversation("late")
        assert early is not None and (early["turn_status"], early["tool_host"]) == ("awaiting_approval", "pod-a")
        assert late is not None and (late["turn_status"], late["tool_host"]) == ("idle", "pod-b")
    finally:
        await store.close()


@on_both_backends
async def test_hosts_list_registrations_conversations_and_waiting_tools(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        await store.note_host("pod-b", "durable-approvals@pod-b")
        [first] = await store.hosts()
        await store.note_host("pod-b", "durable-approvals@pod-b")
        await store.note_host("pod-c", "durable-approvals@pod-c", stopping=True)
        for cid, host in (("c1", "pod-a"), ("c2", "pod-a"), ("c3", "pod-b"), ("gone", "pod-a")):
            await store.set_tool_host(cid, host)
        await store.project_conversation(waiting("c1", 5))
        await store.project_conversation(projected("gone", 5, status="closed"))
        listed = {row["host"]: row for row in await store.hosts()}
        on_a = await store.conversations_on_host("pod-a")
        by_host = await store.tools_waiting_by_host()
    finally:
        await store.close()

    assert list(listed) == ["pod-a", "pod-b", "pod-c"]
    counts = {host: (row["conversations"], row["waiting_tools"]) for host, row in listed.items()}
    assert counts == {"pod-a": (2, 1), "pod-b": (1, 0), "pod-c": (0, 0)}
    # pod-a registered nothing: its queue is the one its waiting tool names.
    assert (listed["pod-a"]["task_queue"], listed["pod-a"]["last_seen"]) == ("durable-approvals@pod-a", None)
    pod_b = listed["pod-b"]
    assert pod_b["started_at"] == first["started_at"] and pod_b["last_seen"] >= first["last_seen"]
    assert pod_b["stopped_at"] is None and listed["pod-c"]["stopped_at"] is not None
    assert on_a == ["c1", "c2"]
    assert by_host == {"pod-a": 1}


@on_both_backends
async def test_a_start_after_a_stop_starts_the_host_again(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        await store.note_host("pod-a", "durable-approvals@pod-a")
        [started] = await store.hosts()
        await store.note_host("pod-a", "durable-approvals@pod-a", stopping=True)
        await store.note_host("pod-a", "durable-approvals@pod-a", stopping=True)  # a second stop changes no start
        [stopped] = await store.hosts()
        await store.note_host("pod-a", "durable-approvals@pod-a")
        [again] = await store.hosts()
    finally:
        await store.close()
    assert stopped["started_at"] == started["started_at"] and stopped["stopped_at"] is not None
    assert again["stopped_at"] is None and again["started_at"] > started["started_at"]


@on_both_backends
async def test_a_move_is_a_switch_in_the_audit(database: Db) -> None:
    await write(
        database,
        projected("c", 1, EVENT_MOVED, moved_payload("pod-b", "host_gone")),
        projected("c", 2, EVENT_MOVED, {**moved_payload("pod-c", "handed_over"), "from_host": "pod-b"}),
        projected("c", 3, EVENT_MOVED, {**moved_payload("pod-d", "moved", "alice"), "from_host": None}),
    )
    store = ProjectionStore(database)
    try:
        switches = await store.switches("c")
        trail = [row for row in await store.audit_trail() if row["kind"] == "switch"]
        row = await store.conversation("c")
    finally:
        await store.close()
    assert [switch_text(row) for row in switches] == [
        "moved from pod-a to pod-b (host gone: no worker polled it)",
        "moved from pod-b to pod-c (handed over by its stopping worker)",
        "moved to pod-d by alice (cli)",
    ]
    assert [(r["switch"], r["to_host"], r["why"]) for r in trail] == [
        ("move", "pod-b", "host_gone"),
        ("move", "pod-c", "handed_over"),
        ("move", "pod-d", "moved"),
    ]
    assert row is not None and row["tool_host"] == "pod-d"
