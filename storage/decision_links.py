"""The uses of one-time decision links (core/decision_links.py): one row per token id, so a link
decides once, whichever UI process or host it reaches.

The row is inserted before the decision is sent, and the primary key arbitrates: of any number of
concurrent posts of one link exactly one adds it; the others are told the link was used. A decision
that is then refused or cannot be delivered gives its row back (`release_link_use`), so what stays
is one row per decision a link made: the audit reads them (`storage/audit.py`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from storage.backend import Tx


async def record_link_use(tx: Tx, token_id: str, request_id: str, person: str, decision: str) -> bool:
    """Whether this use is the link's first (False: it was used already)."""
    added = await tx.execute(
        "INSERT INTO ui_decision_links (token_id, request_id, person, decision, used_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (token_id) DO NOTHING",
        (token_id, request_id, person, decision, datetime.now(UTC).isoformat()),
    )
    return added > 0


async def release_link_use(tx: Tx, token_id: str) -> None:
    await tx.send("DELETE FROM ui_decision_links WHERE token_id = ?", (token_id,))


async def link_use(tx: Tx, token_id: str) -> dict[str, Any] | None:
    """The link's recorded use (request_id, person, decision, used_at), or None while unused."""
    return await tx.fetchone(
        "SELECT token_id, request_id, person, decision, used_at FROM ui_decision_links WHERE token_id = ?",
        (token_id,),
    )


async def links_by_request(tx: Tx) -> dict[str, list[dict[str, Any]]]:
    """Every used link, by the request it decided, oldest use first."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in await tx.fetchall(
        "SELECT token_id, request_id, person, decision, used_at FROM ui_decision_links ORDER BY used_at, token_id"
    ):
        found.setdefault(row.pop("request_id"), []).append(row)
    return found
