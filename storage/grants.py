"""Grants in the projection (`ui_grants`): who allowed which calls, where, until when, and who ended it.

The doors write them (`grants add`, `approve --grant`, `approve --always`, the card's offer); the
workflow's activity reads the active ones in a conversation's scope before it brings a call to a
person. A revoked grant stays as a record (who revoked it, when); an expired one needs no write.
Times are stored as ISO text in UTC, like the other tables; whether a grant is still active is
judged in Python (`Grant.active`), so both backends agree to the microsecond.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.grants import Grant
from storage.backend import Tx

_COLUMNS = (
    "grant_id, pattern, scope, conversation_id, made_by, door, created_at, expires_at, revoked_at, revoked_by,"
    " from_request"
)
# A subagent's parent chain is short (delegation depth); this bounds a cycle written by mistake.
MAX_DEPTH = 64


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _grant(row: dict[str, Any]) -> Grant:
    return Grant.model_validate(row)


async def add_grant(tx: Tx, grant: Grant) -> None:
    await tx.send(
        f"INSERT INTO ui_grants ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            grant.grant_id,
            grant.pattern,
            grant.scope,
            grant.conversation_id,
            grant.made_by,
            grant.door,
            _iso(grant.created_at),
            _iso(grant.expires_at),
            _iso(grant.revoked_at),
            grant.revoked_by,
            grant.from_request,
        ),
    )


async def list_grants(tx: Tx, include_ended: bool, now: datetime) -> list[Grant]:
    """Oldest first; only the active ones unless include_ended (then revoked and expired too)."""
    sql = f"SELECT {_COLUMNS} FROM ui_grants"
    if not include_ended:
        sql += " WHERE revoked_at IS NULL"
    found = [_grant(row) for row in await tx.fetchall(sql + " ORDER BY created_at, grant_id")]
    return found if include_ended else [grant for grant in found if grant.active(now)]


async def get_grant(tx: Tx, grant_id: str) -> Grant | None:
    row = await tx.fetchone(f"SELECT {_COLUMNS} FROM ui_grants WHERE grant_id = ?", (grant_id,))
    return None if row is None else _grant(row)


async def revoke_grant(tx: Tx, grant_id: str, by: str, at: datetime) -> Grant | None:
    """The grant after the revocation; one revoked already keeps its first revocation; None: unknown."""
    await tx.send(
        "UPDATE ui_grants SET revoked_at = ?, revoked_by = ? WHERE grant_id = ? AND revoked_at IS NULL",
        (_iso(at), by, grant_id),
    )
    return await get_grant(tx, grant_id)


async def grants_in_scope(tx: Tx, conversation_ids: list[str]) -> list[Grant]:
    """The grants not revoked that reach these conversations: every `everywhere` one and those made
    for one of them (expired ones included: the caller judges `active(now)` at its own moment)."""
    sql = f"SELECT {_COLUMNS} FROM ui_grants WHERE revoked_at IS NULL AND (scope = 'everywhere'"
    params: list[Any] = []
    if conversation_ids:
        sql += f" OR (scope = 'conversation' AND conversation_id IN ({', '.join('?' * len(conversation_ids))}))"
        params += conversation_ids
    found = await tx.fetchall(sql + ") ORDER BY created_at, grant_id", params)
    return [_grant(row) for row in found]


async def top_conversation(tx: Tx, conversation_id: str) -> str:
    """The conversation at the top of this one's delegation chain (itself when it has no parent,
    or is not in the projection yet): a grant for a conversation covers its subagents."""
    current, seen = conversation_id, {conversation_id}
    for _ in range(MAX_DEPTH):
        row = await tx.fetchone("SELECT parent_id FROM ui_conversations WHERE conversation_id = ?", (current,))
        parent = None if row is None else row["parent_id"]
        if not parent or parent in seen:
            return current
        current = parent
        seen.add(current)
    return current
