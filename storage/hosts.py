"""Worker hosts in the projection: which host each conversation's tools run on, what a tool waits
for when no worker polls that host, and the hosts the workers registered.

The workflow says when a tool waits for a gone host, when the host came back, and when the
conversation moved (core/hosts.py's events); the conversation row keeps the current wait so the
inbox, `show` and `hosts` can say it without reading the event log. Workers note themselves on
start, while running and when stopping, so `hosts` lists a host that holds no conversation too.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from core.hosts import EVENT_HOST_BACK, EVENT_HOST_WAITING, EVENT_MOVED
from core.projection_model import ConversationProjection
from storage.backend import Tx

NOT_CLOSED = "turn_status <> 'closed'"


def _now() -> str:
    return datetime.now(UTC).isoformat()


def host_changes(conv: ConversationProjection) -> tuple[str | None, str | None] | None:
    """(host_wait_json, tool_host) after the write's events, in order; None when they change neither.
    A closed conversation waits for nothing; tool_host None keeps the row's."""
    changed = conv.turn_status == "closed"
    wait: str | None = None
    moved_to: str | None = None
    for event in conv.events:
        if event.event_type == EVENT_HOST_WAITING:
            changed, wait = True, json.dumps(event.payload, sort_keys=True)
        elif event.event_type == EVENT_HOST_BACK:
            changed, wait = True, None
        elif event.event_type == EVENT_MOVED:
            changed, wait = True, None
            moved_to = event.payload.get("to_host") or moved_to
    if not changed:
        return None
    return (None if conv.turn_status == "closed" else wait), moved_to


async def apply_host_events(tx: Tx, conv: ConversationProjection) -> None:
    """After the conversation's upsert: only a write whose version holds the row changes it, so an
    older write arriving late (a retried activity) never brings back a wait that ended."""
    changes = host_changes(conv)
    if changes is None:
        return
    wait, moved_to = changes
    await tx.send(
        "UPDATE ui_conversations SET host_wait_json = ?, tool_host = COALESCE(?, tool_host)"
        " WHERE conversation_id = ? AND version = ?",
        (wait, moved_to, conv.conversation_id, conv.version),
    )


async def note_host(tx: Tx, host: str, host_queue: str, stopping: bool) -> None:
    """A worker says it is up (or stopping): a start after a stop starts the host's record again."""
    now = _now()
    await tx.send(
        """INSERT INTO ui_hosts (host, task_queue, started_at, last_seen, stopped_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (host) DO UPDATE SET task_queue = excluded.task_queue, last_seen = excluded.last_seen,
             started_at = CASE WHEN ui_hosts.stopped_at IS NOT NULL AND excluded.stopped_at IS NULL
               THEN excluded.started_at ELSE ui_hosts.started_at END,
             stopped_at = excluded.stopped_at""",
        (host, host_queue, now, now, now if stopping else None),
    )


async def set_tool_host(tx: Tx, conversation_id: str, host: str) -> None:
    """The host a conversation's tools run on. The conversation's first projection may not have
    landed yet: then a placeholder row at version 0 holds the host, and that projection (whose
    version is above 0) replaces everything in it but the host."""
    await tx.send(
        """INSERT INTO ui_conversations (conversation_id, turn_status, pending_count, updated_at, version, tool_host)
           VALUES (?, 'running', 0, ?, 0, ?)
           ON CONFLICT (conversation_id) DO UPDATE SET tool_host = excluded.tool_host""",
        (conversation_id, _now(), host),
    )


async def conversations_on_host(tx: Tx, host: str) -> list[str]:
    """The conversations not closed whose tools run on host (a stopping worker hands these over)."""
    found = await tx.fetchall(
        f"SELECT conversation_id FROM ui_conversations WHERE tool_host = ? AND {NOT_CLOSED} ORDER BY conversation_id",
        (host,),
    )
    return [str(row["conversation_id"]) for row in found]


def parse_wait(text: str | None) -> dict[str, Any] | None:
    """A row's host_wait_json as the `conversation.host_waiting` payload; None when it waits for no host."""
    if not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


async def _open_waits(tx: Tx) -> list[dict[str, Any]]:
    """The waits of the conversations not closed, each naming its host."""
    found = await tx.fetchall(
        f"SELECT host_wait_json FROM ui_conversations WHERE host_wait_json IS NOT NULL AND {NOT_CLOSED}"
    )
    waits = [parse_wait(row["host_wait_json"]) for row in found]
    return [wait for wait in waits if wait is not None and wait.get("host")]


async def waiting_by_host(tx: Tx) -> dict[str, int]:
    """host -> the conversations not closed whose tool waits for it (the metrics' gauge)."""
    counts: dict[str, int] = {}
    for wait in await _open_waits(tx):
        counts[str(wait["host"])] = counts.get(str(wait["host"]), 0) + 1
    return counts


def _host_row(host: str) -> dict[str, Any]:
    return {
        "host": host,
        "task_queue": None,
        "started_at": None,
        "last_seen": None,
        "stopped_at": None,
        "conversations": 0,
        "waiting_tools": 0,
    }


async def list_hosts(tx: Tx) -> list[dict[str, Any]]:
    """Every registered host, and every host a conversation runs on or waits for, by name; with the
    open conversations on each and how many of them have a tool waiting for it."""
    hosts: dict[str, dict[str, Any]] = {}
    for row in await tx.fetchall("SELECT host, task_queue, started_at, last_seen, stopped_at FROM ui_hosts"):
        hosts[str(row["host"])] = {**_host_row(str(row["host"])), **row}
    for row in await tx.fetchall(
        f"SELECT tool_host, COUNT(*) AS conversations FROM ui_conversations"
        f" WHERE tool_host IS NOT NULL AND {NOT_CLOSED} GROUP BY tool_host"
    ):
        host = str(row["tool_host"])
        hosts.setdefault(host, _host_row(host))["conversations"] = int(row["conversations"])
    for wait in await _open_waits(tx):
        entry = hosts.setdefault(str(wait["host"]), _host_row(str(wait["host"])))
        entry["waiting_tools"] += 1
        entry["task_queue"] = entry["task_queue"] or wait.get("task_queue")
    return [hosts[name] for name in sorted(hosts)]
