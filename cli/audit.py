"""`audit`: every approval request and its decision, and every switch (close, auto-approve) with
who flipped it, from the projection (no worker needed)."""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.output import print_json, short_time, shown, table, tool_call_text
from cli.temporal import Session


async def audit(args: argparse.Namespace, session: Session) -> int:
    from storage.audit import parse_since

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as err:
        raise CliError(f"--since: {err}", EXIT_USAGE) from None
    trail = await session.store().audit_trail(since)
    if args.json:
        print_json(trail)
        return EXIT_OK
    rows = [row for row in trail if row["kind"] == "request"]
    switches = [row for row in trail if row["kind"] == "switch"]
    if switches:
        print(table(["WHEN", "CONVERSATION", "SWITCH"], [_switch_cells(row) for row in switches]) + "\n")
    notices = [row for row in trail if row["kind"] == "notice"]
    if notices:
        print(table(["WHEN", "NOTICE"], [_notice_cells(row) for row in notices]) + "\n")
    if not rows:
        print("No approval request" + (f" since {since}." if since else " yet."))
        return EXIT_OK
    print(
        table(
            ["REQUESTED", "REQUEST", "TOOL CALL", "ARGS HASH", "DECISION", "BY", "VIA", "DECIDED", "OUTCOME"],
            [
                [
                    short_time(row["created_at"]),
                    shown(row["request_id"]),
                    tool_call_text(row["tool_name"], row["arguments"]),
                    row["decided_args_hash"] or row["args_hash"],
                    _decided(row),
                    shown(_who(row)),
                    _via(row),
                    short_time(row["resolved_at"]),
                    row["outcome"],
                ]
                for row in rows
            ],
        )
    )
    return EXIT_OK


def _switch_cells(row: dict) -> list[str]:
    from storage.audit import switch_text

    return [short_time(row["created_at"]), shown(row["conversation_id"]), shown(switch_text(row))]


def _notice_cells(row: dict) -> list[str]:
    from storage.fatigue_notices import notice_text

    return [short_time(row["created_at"]), shown(notice_text(row))]


def _via(row: dict) -> str:
    """The door, and each one-time link that decided the request by its token id (`link TOKEN_ID`)."""
    via = row["decided_via"] or "-"
    links = [f"link {link['token_id']}" for link in row.get("links") or []]
    if not links:
        return str(via)
    return ", ".join(links if via == "link" else [via, *links])


def _decided(row: dict) -> str:
    """The decision, and who supplied what the call needed from a person (never the value)."""
    from core.supplied_arguments import supplied_text

    decision = str(row["decision"] or "waiting")
    return f"{decision}; {shown(supplied_text(row['supplied']))}" if row.get("supplied") else decision


def _who(row: dict) -> str:
    """Who decided, with the groups their door verified."""
    if not row["decided_by"]:
        return "-"
    groups = row.get("decided_groups") or []
    return f"{row['decided_by']} ({', '.join(groups)})" if groups else str(row["decided_by"])
