"""The audit trail: every approval request and its decision, with the door it came through, the
arguments hash it was made on, and what happened when the call ran.

The decision's door and hash live in their own small table beside the approval rows (written
with the resolution, once); the outcome comes from the execution state the tool activity records.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from core.conversation_model import APPROVED_RESOLUTIONS, ApprovalRecord, arguments_hash
from core.hosts import EVENT_MOVED
from storage.backend import Tx
from storage.decision_links import links_by_request


async def write_decision_facts(tx: Tx, record: ApprovalRecord) -> None:
    """Keep how a decision was made; the first write wins, like the resolution it belongs to."""
    if record.resolution is None:
        return
    supplied = json.dumps(record.supplied_by, sort_keys=True) if record.supplied_by else None  # who, never what
    await tx.send(
        "INSERT INTO ui_decision_facts (request_id, decided_via, decided_args_hash, decided_groups_json, supplied_json)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (record.request_id, record.decided_via, record.decided_args_hash, json.dumps(record.decided_groups), supplied),
    )


# What became of the call: decided rows that never ran say so; an allowed call's execution state
# (written by the tool activity) says whether it ran, failed, or may have run (unknown).
_OUTCOMES = {"done": "ran", "failed": "failed", "unknown": "unknown", "running": "running"}


def outcome(decision: str | None, execution_state: str | None) -> str:
    if decision is None:
        return "waiting"
    if decision not in APPROVED_RESOLUTIONS:
        return "not run"
    if execution_state is None:
        return "not recorded"
    return _OUTCOMES.get(execution_state, execution_state)


async def list_audit(tx: Tx, since: str | None = None) -> list[dict[str, Any]]:
    """Every request since an ISO time (all when None), oldest first."""
    sql = (
        "SELECT a.request_id, a.conversation_id, a.tool_name, a.permission_type, a.details_json, a.created_at,"
        " a.resolved_at, a.decision, a.decided_by, a.reason, a.execution_state, f.decided_via, f.decided_args_hash,"
        " a.edited_arguments_json, f.decided_groups_json, f.supplied_json"
        " FROM ui_pending_approvals a LEFT JOIN ui_decision_facts f ON f.request_id = a.request_id"
    )
    params: list[Any] = []
    if since is not None:
        sql += " WHERE a.created_at >= ? OR a.resolved_at >= ?"
        params = [since, since]
    sql += " ORDER BY a.created_at, a.request_id"
    rows = []
    links = await links_by_request(tx)
    for item in await tx.fetchall(sql, params):
        arguments = json.loads(item.pop("details_json")).get("arguments", {})
        item["arguments"] = arguments
        item["args_hash"] = arguments_hash(arguments)
        edited = item.pop("edited_arguments_json")
        item["edited_arguments"] = json.loads(edited) if edited else None  # what an edit ran instead
        item["decided_groups"] = json.loads(item.pop("decided_groups_json") or "[]")
        item["supplied"] = json.loads(item.pop("supplied_json") or "{}")  # argument -> who supplied it
        item["outcome"] = outcome(item["decision"], item["execution_state"])
        # The one-time links that decided it (door `link`): each one's token id, person and decision.
        item["links"] = links.get(item["request_id"], [])
        rows.append(item)
    return rows


# The conversation's switches: a close, every auto-approve switch and every move to another host,
# with who flipped it and how (a move the workflow made itself names no one).
_SWITCH_EVENTS = {"conversation.closed": "close", "conversation.auto_approve": "auto_approve", EVENT_MOVED: "move"}
# Why a conversation moved when no person moved it.
_MOVE_REASONS = {"host_gone": "host gone: no worker polled it", "handed_over": "handed over by its stopping worker"}


async def list_switches(tx: Tx, since: str | None = None, conversation_id: str | None = None) -> list[dict[str, Any]]:
    """Every switch since an ISO time (all when None), of one conversation or all, oldest first."""
    marks = ", ".join("?" * len(_SWITCH_EVENTS))
    sql = f"SELECT conversation_id, event_type, payload_json, created_at FROM ui_events WHERE event_type IN ({marks})"
    params: list[Any] = list(_SWITCH_EVENTS)
    if since is not None:
        sql += " AND created_at >= ?"
        params.append(since)
    if conversation_id is not None:
        sql += " AND conversation_id = ?"
        params.append(conversation_id)
    rows = []
    for item in await tx.fetchall(sql + " ORDER BY event_id", params):
        payload = json.loads(item["payload_json"])
        row = {
            "kind": "switch",
            "conversation_id": item["conversation_id"],
            "switch": _SWITCH_EVENTS[item["event_type"]],
            "enabled": payload.get("enabled"),
            "by": payload.get("by"),
            "door": payload.get("door"),
            # A close names its own moment: the signal's, which a running call may have outlasted.
            "created_at": payload.get("at") or item["created_at"],
        }
        if row["switch"] == "move":
            row |= {key: payload.get(key) for key in ("from_host", "to_host", "why")}
        rows.append(row)
    return rows


async def list_shadow_differences(tx: Tx, since: str | None = None) -> list[dict[str, Any]]:
    """Calls the [shadow] rules judged otherwise than the live ones (workflows/shadow_rules.py), oldest first."""
    sql = "SELECT conversation_id, payload_json, created_at FROM ui_events WHERE event_type = 'policy.shadow_differs'"
    params: list[Any] = []
    if since is not None:
        sql += " AND created_at >= ?"
        params.append(since)
    found = await tx.fetchall(sql + " ORDER BY event_id", params)
    return [
        {"conversation_id": row["conversation_id"], "created_at": row["created_at"], **json.loads(row["payload_json"])}
        for row in found
    ]


async def list_trail(tx: Tx, since: str | None = None) -> list[dict[str, Any]]:
    """The whole audit: requests (kind `request`), switches (kind `switch`) and rapid-approval
    notices (kind `notice`), oldest first."""
    from storage.fatigue_notices import list_notices

    requests = [{"kind": "request", **row} for row in await list_audit(tx, since)]
    others = await list_switches(tx, since) + await list_notices(tx, since)
    return sorted(requests + others, key=lambda row: str(row["created_at"]))


def switch_text(row: dict[str, Any]) -> str:
    """`closed by alice (ui)`, `auto-approve switched on by bob (cli)`, `finished its task for conv-1 (subagent)`,
    `moved from pod-a to pod-b (host gone: no worker polled it)`."""
    if row["switch"] == "close" and row["door"] == "subagent":
        return f"finished its task for {row['by']} (subagent)"
    if row["switch"] == "move":
        return move_text(row)
    what = "closed" if row["switch"] == "close" else f"auto-approve switched {'on' if row['enabled'] else 'off'}"
    door = row["door"] or "signal"
    return f"{what} by {row['by']} ({door})" if row["by"] else f"{what} by an unnamed caller ({door})"


def move_text(row: dict[str, Any]) -> str:
    """`moved from pod-a to pod-b` and why: the workflow's own reason, or the person who moved it."""
    where = f"from {row['from_host']} to {row['to_host']}" if row.get("from_host") else f"to {row['to_host']}"
    reason = _MOVE_REASONS.get(str(row.get("why")))
    if reason is not None:
        return f"moved {where} ({reason})"
    door = row.get("door") or "signal"
    return f"moved {where} by {row['by']} ({door})" if row.get("by") else f"moved {where} by an unnamed caller ({door})"


_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(text: str, now: datetime | None = None) -> str:
    """`--since` as stored times compare: a duration back from now (30m, 12h, 7d) or an ISO date or
    time (UTC unless it says otherwise). Raises ValueError for anything else."""
    match = _DURATION.match(text.strip())
    if match:
        moment = (now or datetime.now(UTC)) - timedelta(**{_UNITS[match[2]]: int(match[1])})
    else:
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is neither a duration (30m, 12h, 7d) nor an ISO date or time") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()
