"""Shared pieces of the failure tests: worker subprocesses, effect files, projection checks, replay.

The failure tests kill real processes, so their histories come from whatever server they ran on;
`replay_recorded` fetches every run of every conversation from that server and replays it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from config.settings import Settings
from core.conversation_model import ConversationState
from doors.control import get_state
from tests.conftest import save_and_replay
from tests.support.helpers import Db, eventually, pending_rows, rows
from tests.support.processes import WorkerProcess, process_env
from tests.support.scripts import Behaviour, first_user_text


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


@contextmanager
def worker_process(settings: Settings, client: Client, log: Path) -> Iterator[WorkerProcess]:
    """`python worker.py` against the client's server; stopped (if still alive) on the way out."""
    worker = WorkerProcess(process_env(settings, address_of(client)), log).start()
    try:
        yield worker
    finally:
        worker.stop()


async def holds(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll a plain predicate until it holds (eventually() takes async checks)."""

    async def check() -> bool:
        return predicate()

    await eventually(check, timeout=timeout)


async def wait_turn(client: Client, conversation_id: str, status: str, timeout: float = 90.0) -> ConversationState:
    """Like wait_status, but a query that times out (no live worker yet) is a "not yet"."""

    async def check() -> ConversationState | None:
        try:
            state = await get_state(client, conversation_id)
        except RPCError:
            return None
        return state if state.turn_status == status else None

    return await eventually(check, timeout=timeout, interval=0.3)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def by_marker(scripts: dict[str, Behaviour]) -> Behaviour:
    """One model for many conversations: each is recognised by its first user message."""
    return lambda messages: scripts[first_user_text(messages)](messages)


def held_first(behaviour: Behaviour, gate: threading.Event) -> Behaviour:
    """The first request waits for the gate (a model call in flight); later ones answer at once."""
    seen: list[int] = []
    lock = threading.Lock()

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        with lock:
            first = not seen
            seen.append(1)
        if first:
            gate.wait(timeout=120)
        return behaviour(messages)

    return behave


def assistant_count(state: ConversationState) -> int:
    return sum(1 for message in state.messages if message.role == "assistant")


def assert_projection_matches(db: Db, state: ConversationState) -> None:
    """The projection shows what the workflow holds: the same pending ids and turn status."""
    cid = state.conversation_id
    assert sorted(r["request_id"] for r in pending_rows(db, cid)) == sorted(
        a.request_id for a in state.pending_approvals
    )
    [conversation] = rows(db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", cid)
    assert (conversation["turn_status"], conversation["pending_count"]) == (
        state.turn_status,
        len(state.pending_approvals),
    )


async def projection_catches_up(client: Client, db: Db, conversation_id: str) -> ConversationState:
    """The projection lags history by one activity at most: wait until it shows what the query shows."""

    async def check() -> ConversationState:
        try:
            state = await get_state(client, conversation_id)
        except RPCError as err:  # a worker still reconnecting after an outage answers late
            raise AssertionError(f"get_state: {err}") from err
        assert_projection_matches(db, state)
        return state

    return await eventually(check)


async def replay_recorded(client: Client, conversation_ids: list[str], label: str) -> int:
    """Save and replay every run of the given conversations (as the `histories` fixture does);
    returns how many runs replayed."""
    replayed = 0
    for conversation_id in conversation_ids:
        async for execution in client.list_workflows(f"WorkflowId = '{conversation_id}'"):
            handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
            await save_and_replay(client, await handle.fetch_history(), f"{label}-{execution.id}-{execution.run_id}")
            replayed += 1
    return replayed
