"""`rules suggest`: allow rules for calls people approved every time, quickly (from the audit);
`rules reload`: the policy file's rules sent to every open conversation; `rules replay` lives in
cli/rules_replay.py.

Only shown: the rule goes into POLICY_FILE when a person copies it there, never by itself. A
suggestion an ask rule of the current policy would block says which rule, and a candidate that
would let a refused call run is withdrawn, with a line on stderr that says so.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.output import print_json, shown, table
from cli.temporal import Session

if TYPE_CHECKING:
    from core.policy_rules import PolicyRules


async def rules(args: argparse.Namespace, session: Session) -> int:
    if args.action == "replay":
        from cli.rules_replay import replay

        return await replay(args, session)
    if args.action == "reload":
        return await reload(session)
    if args.action == "shadow":
        return await shadow(args, session)
    return await suggest(args, session)


async def shadow(args: argparse.Namespace, session: Session) -> int:
    """What the [shadow] rules would have changed on real calls (workflows/shadow_rules.py)."""
    found = await session.store().shadow_differences(since_of(args))
    if args.json:
        print_json(found)
        return EXIT_OK
    if not found:
        print("No call was judged otherwise by the shadow rules.")
        return EXIT_OK
    head = ["WHEN", "CONVERSATION", "CALL", "LIVE", "SHADOW"]
    rows = [
        [
            row["created_at"][:19],
            row["conversation_id"],
            f"{row['tool_name']}({row['main_argument']})",
            row["live"],
            row["shadow"],
        ]
        for row in found
    ]
    print(table(head, rows))
    return EXIT_OK


async def reload(session: Session) -> int:
    """POLICY_FILE's rules to every open conversation (doors/policy_reload.py); a file that does not
    parse is refused with its one-line error before anything is sent."""
    from cli.temporal import rpc
    from doors.policy_reload import reload_rules

    current_policy(session)  # checked first: a bad file is exit 2, nothing sent
    client = await session.client()
    reloaded = await rpc(reload_rules(client, session.settings, session.store()), "reloading the rules")
    source = session.settings.policy_file or "the built-in rules"
    print(f"Reloaded {source}: sent to {reloaded.conversations} open conversation(s).")
    return EXIT_OK


def since_of(args: argparse.Namespace) -> str | None:
    from storage.audit import parse_since

    try:
        return parse_since(args.since) if args.since else None
    except (ValueError, OverflowError) as err:
        raise CliError(f"--since: {err}", EXIT_USAGE) from None


def current_policy(session: Session) -> PolicyRules:
    from config.errors import ConfigError

    try:
        return session.settings.load_policy()
    except ConfigError as err:
        raise CliError(str(err), EXIT_USAGE) from None


async def suggest(args: argparse.Namespace, session: Session) -> int:
    from core.fatigue import FatigueLimits, review_suggestions

    since = since_of(args)
    policy = current_policy(session)
    limits = FatigueLimits(min_count=args.min_count, max_median_seconds=args.max_median)
    review = review_suggestions(await session.store().audit(since), limits, policy)
    for withdrawn in review.withdrawn:
        print(shown(withdrawn.text()), file=sys.stderr)
    found = review.suggestions
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
            ["RULE", "COVERS", "MEDIAN DECISION", "STILL ASKED", "BLOCKED BY"],
            [
                [
                    shown(item.rule),
                    str(item.covers),
                    f"{item.median_seconds:.1f} s",
                    f"{item.not_covered}"
                    + (f" (e.g. {shown(', '.join(item.not_covered_examples))})" if item.not_covered else ""),
                    f"ask rule {item.blocked_by}" if item.blocked_by else "-",
                ]
                for item in found
            ],
        )
    )
    rules_text = ", ".join(f'"{item.rule}"' for item in found)
    print(f"\nNothing was changed. To stop asking for these, add to POLICY_FILE:\n  allow = [..., {rules_text}]")
    blocking = sorted({item.blocked_by for item in found if item.blocked_by})
    if blocking:
        print(
            f"An ask rule outranks every allow: remove or narrow {', '.join(repr(rule) for rule in blocking)}"
            " in `ask`, or these allow rules change nothing."
        )
    return EXIT_OK
