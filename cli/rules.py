"""`rules suggest`: allow rules for calls people approved every time, quickly (from the audit).

Only shown: the rule goes into POLICY_FILE when a person copies it there, never by itself.
"""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.output import print_json, shown, table
from cli.temporal import Session


async def rules(args: argparse.Namespace, session: Session) -> int:
    from core.fatigue import FatigueLimits, suggest_rules
    from storage.audit import parse_since

    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as err:
        raise CliError(f"--since: {err}", EXIT_USAGE) from None
    limits = FatigueLimits(min_count=args.min_count, max_median_seconds=args.max_median)
    found = suggest_rules(await session.store().audit(since), limits)
    if args.json:
        print_json([suggestion.as_dict() for suggestion in found])
        return EXIT_OK
    if not found:
        print(
            f"No suggestion: no call was approved at least {limits.min_count} times, never denied or edited,"
            f" with a median decision under {limits.max_median_seconds:g} s."
        )
        return EXIT_OK
    print(
        table(
            ["RULE", "COVERS", "MEDIAN DECISION", "STILL ASKED"],
            [
                [
                    shown(item.rule),
                    str(item.covers),
                    f"{item.median_seconds:.1f} s",
                    f"{item.not_covered}"
                    + (f" (e.g. {shown(', '.join(item.not_covered_examples))})" if item.not_covered else ""),
                ]
                for item in found
            ],
        )
    )
    rules_text = ", ".join(f'"{item.rule}"' for item in found)
    print(f"\nNothing was changed. To stop asking for these, add to POLICY_FILE:\n  allow = [..., {rules_text}]")
    return EXIT_OK
