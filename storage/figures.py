"""The approvals' figures as the read model holds them, for the metrics every UI serves.

Counted from the rows, not from what one process saw, so a decision made through any door (the
CLI, Slack, another UI) counts on every UI's `/metrics`. Only tool names, doors, channels and
refusal reasons become labels: never arguments, people or reasons typed by a person.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from storage.backend import Tx

UPDATE_SUFFIX = "-update"  # the ledger's name for the update of a posted message (activities/notify.py)
NO_DOOR = "none"  # an expiry, a cancel or a raw signal: no door recorded
# The decisions counter's outcomes: an always-allow is an allow.
OUTCOMES = {"allow": "allow", "always_allow": "allow", "deny": "deny", "edit": "edit"}
OUTCOMES |= {"expired": "expired", "canceled": "canceled"}
PEOPLES_OUTCOMES = ("allow", "deny", "edit")  # the ones a person took: time to decision counts these


@dataclass
class Figures:
    waiting: Counter[str] = field(default_factory=Counter)  # tool -> unresolved requests
    decisions: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (outcome, door, tool)
    decision_seconds: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (tool, door) -> seconds
    refusals: Counter[tuple[str, str]] = field(default_factory=Counter)  # (reason, door)
    notices: int = 0  # rapid-approval notices recorded


def seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


async def projection_figures(tx: Tx) -> Figures:
    figures = Figures()
    for row in await tx.fetchall(
        "SELECT tool_name, COUNT(*) AS waiting FROM ui_pending_approvals WHERE resolved_at IS NULL GROUP BY tool_name"
    ):
        figures.waiting[row["tool_name"]] = int(row["waiting"])
    for row in await tx.fetchall(
        "SELECT a.tool_name, a.decision, a.created_at, a.resolved_at, f.decided_via FROM ui_pending_approvals a"
        " LEFT JOIN ui_decision_facts f ON f.request_id = a.request_id WHERE a.resolved_at IS NOT NULL"
    ):
        outcome = OUTCOMES.get(row["decision"])
        if outcome is None:
            continue
        door = row["decided_via"] or NO_DOOR
        figures.decisions[(outcome, door, row["tool_name"])] += 1
        took = seconds_between(row["created_at"], row["resolved_at"])
        if outcome in PEOPLES_OUTCOMES and took is not None:
            figures.decision_seconds.setdefault((row["tool_name"], door), []).append(max(took, 0.0))
    for row in await tx.fetchall("SELECT reason, door, refused FROM ui_decision_refusals"):
        figures.refusals[(row["reason"], row["door"])] = int(row["refused"])
    found = await tx.fetchone("SELECT COUNT(*) AS notices FROM ui_fatigue_notices")
    figures.notices = int(found["notices"]) if found else 0
    return figures


@dataclass
class NotificationFigures:
    delivered: Counter[str] = field(default_factory=Counter)  # channel -> notifications delivered
    escalations: Counter[str] = field(default_factory=Counter)  # channel -> escalations delivered


async def _deliveries(tx: Tx) -> list[tuple[str, str, str]]:
    """(request, channel, kind) of every notification the ledger recorded as delivered: a
    notification's key is `REQUEST:CHANNEL:KIND[-N]`; the updates of posted messages are left out."""
    found = []
    for row in await tx.fetchall(
        "SELECT request_id, tool_name FROM tool_executions WHERE substr(tool_name, 1, 7) = 'notify:'"
        " AND state = 'finished'"
    ):
        parts = str(row["request_id"]).rsplit(":", 2)
        if len(parts) == 3 and not str(row["tool_name"]).endswith(UPDATE_SUFFIX):
            found.append((parts[0], parts[1], parts[2]))
    return found


async def ledger_figures(tx: Tx) -> NotificationFigures:
    figures = NotificationFigures()
    for _, channel, kind in await _deliveries(tx):
        figures.delivered[channel] += 1
        if kind.startswith("escalation"):
            figures.escalations[channel] += 1
    return figures


async def count_refusal(tx: Tx, reason: str, door: str | None) -> None:
    await tx.send(
        "INSERT INTO ui_decision_refusals (reason, door, refused) VALUES (?, ?, 1)"
        " ON CONFLICT (reason, door) DO UPDATE SET refused = ui_decision_refusals.refused + 1",
        (reason, door or NO_DOOR),
    )


async def escalated_requests(tx: Tx) -> set[str]:
    """The requests an escalation was delivered for."""
    return {request for request, _, kind in await _deliveries(tx) if kind.startswith("escalation")}
