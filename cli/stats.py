"""`stats`: how approvals go (time to decision per day, approval rate per tool, decisions per
person and door, expired and escalated requests, the slowest tools), from the projection."""

from __future__ import annotations

import argparse
from typing import Any

from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.output import print_json, shown, table
from cli.temporal import Session


async def stats(args: argparse.Namespace, session: Session) -> int:
    from core.stats import approval_stats
    from storage.audit import parse_since
    from storage.backend import open_backend
    from storage.figures import escalated_requests

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as err:
        raise CliError(f"--since: {err}", EXIT_USAGE) from None
    ledger = open_backend(session.settings.ledger_db, "ledger")
    try:
        escalated = await ledger.run(escalated_requests, write=False)
    finally:
        await ledger.close()
    figures = approval_stats(await session.store().audit(since), escalated)
    if args.json:
        print_json(figures)
        return EXIT_OK
    _print(figures, since)
    return EXIT_OK


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _print(figures: dict[str, Any], since: str | None) -> None:
    totals = figures["totals"]
    print(
        f"{totals['requests']} requests" + (f" since {since}" if since else "") + f": {totals['decided']} decided"
        f" ({_rate(totals['approval_rate'])} approved), {totals['expired']} expired, {totals['canceled']} canceled,"
        f" {totals['escalated']} escalated, {totals['waiting']} waiting; time to decision median"
        f" {_seconds(totals['median_seconds'])}, p90 {_seconds(totals['p90_seconds'])}"
    )
    if not figures["per_tool"]:
        return
    print(
        "\n"
        + table(
            ["DAY", "DECISIONS", "MEDIAN", "P90"],
            [
                [day["day"], str(day["decisions"]), _seconds(day["median_seconds"]), _seconds(day["p90_seconds"])]
                for day in figures["per_day"]
            ],
        )
    )
    columns = ["TOOL", "REQUESTS", "ALLOWED", "DENIED", "EDITED", "EXPIRED", "ESCALATED", "APPROVAL RATE", "MEDIAN"]
    print(
        "\n"
        + table(
            columns,
            [
                [
                    shown(tool["tool"]),
                    str(tool["requests"]),
                    str(tool["allowed"]),
                    str(tool["denied"]),
                    str(tool["edited"]),
                    str(tool["expired"]),
                    str(tool["escalated"]),
                    _rate(tool["approval_rate"]),
                    _seconds(tool["median_seconds"]),
                ]
                for tool in figures["per_tool"]
            ],
        )
    )
    print(
        "\n"
        + table(
            ["PERSON", "DOOR", "DECISIONS"],
            [[shown(row["person"]), row["door"], str(row["decisions"])] for row in figures["per_person"]],
        )
    )
    slowest = ", ".join(f"{tool['tool']} ({_seconds(tool['median_seconds'])})" for tool in figures["slowest_tools"])
    print(f"\nSlowest to get a decision (median): {shown(slowest)}")
