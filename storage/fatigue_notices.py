"""Rapid-approval notices: a person who approved many requests in a row faster than anyone reads
them is told so on the page, and the audit keeps it (`kind: notice`). Judged from the decision
claims (every door claims before it sends), by core/fatigue.py's rule."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.fatigue import rapid_run
from storage.backend import Tx
from storage.writes import now_iso


async def note_rapid_run(tx: Tx, person: str, count: int, seconds: float) -> dict[str, Any] | None:
    """Record a notice when this person's newest `count` approvals came each within `seconds` of
    the one before, unless one was recorded during that run already; returns the new notice."""
    if count < 2:
        return None
    rows = await tx.fetchall(
        "SELECT claimed_at FROM ui_decision_claims WHERE decided_by = ? AND decision IN ('allow', 'always_allow')"
        " ORDER BY claimed_at DESC LIMIT ?",
        (person, count),
    )
    times = sorted(datetime.fromisoformat(str(row["claimed_at"])) for row in rows)
    if not rapid_run(times, count, seconds):
        return None
    run_started = times[0].isoformat()
    if await tx.fetchone(
        "SELECT 1 AS noticed FROM ui_fatigue_notices WHERE principal = ? AND noticed_at >= ?", (person, run_started)
    ):
        return None
    notice = {"principal": person, "approvals": count, "within_seconds": seconds, "noticed_at": now_iso()}
    await tx.send(
        "INSERT INTO ui_fatigue_notices (principal, approvals, within_seconds, noticed_at) VALUES (?, ?, ?, ?)",
        (person, count, seconds, notice["noticed_at"]),
    )
    return notice


async def list_notices(tx: Tx, since: str | None = None, person: str | None = None) -> list[dict[str, Any]]:
    """Notices since an ISO time (all when None), of one person or all, oldest first."""
    sql = "SELECT principal, approvals, within_seconds, noticed_at FROM ui_fatigue_notices WHERE 1 = 1"
    params: list[Any] = []
    if since is not None:
        sql += " AND noticed_at >= ?"
        params.append(since)
    if person is not None:
        sql += " AND principal = ?"
        params.append(person)
    return [
        {"kind": "notice", "created_at": row["noticed_at"], **row}
        for row in await tx.fetchall(sql + " ORDER BY noticed_at", params)
    ]


def notice_text(notice: dict[str, Any]) -> str:
    return (
        f"{notice['principal']} approved {notice['approvals']} requests in a row, each within"
        f" {notice['within_seconds']:g} s of the one before: faster than they can be read"
    )
