"""`grants add|list|revoke` and the grant of `approve --grant`: a person's "allow calls like this".

A grant is made by a person (APPROVER_TOKEN, `--as` or the login, as for a decision) whom the
approver rules admit for the calls it could cover; it approves at once what already waits and is
covered (door `grant`), and the workflow lets it decide later calls until it expires or is revoked.
Listing reads the projection only.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_OK, EXIT_USAGE, CliError, refused
from cli.output import note, print_json, short_time, shown, table
from cli.temporal import Session

if TYPE_CHECKING:
    from core.conversation_model import DecisionInput
    from core.grants import Grant
    from doors.grants import MadeGrant


async def grants(args: argparse.Namespace, session: Session) -> int:
    if args.action == "list":
        return await _list(args, session)
    if args.action == "revoke":
        return await _revoke(args, session)
    return await _add(args, session)


async def _add(args: argparse.Namespace, session: Session) -> int:
    from cli.users import who_decides

    name, groups, _ = await who_decides(args, session)
    scope = "everywhere" if args.everywhere else "conversation"
    grant = await planned(session, args.pattern, name, groups, scope, args.conversation, args.grant_for, "cli")
    made = await make(session, grant, groups)
    if args.json:
        print_json(made.document())
        return EXIT_OK
    announce(made)
    return EXIT_OK


async def planned(
    session: Session,
    pattern: str,
    name: str,
    groups: list[str],
    scope: str,
    conversation_id: str | None,
    for_seconds: float | None,
    door: str,
    from_request: str | None = None,
) -> Grant:
    """The grant checked, not stored: a bad pattern is exit 2, a refused maker or an unknown
    conversation exit 3."""
    from config.settings import ConfigError
    from doors.grants import BadGrant, GrantRefused, UnknownGrant, new_grant

    try:
        return await new_grant(
            session.settings,
            session.store(),
            pattern=pattern,
            scope="everywhere" if scope == "everywhere" else "conversation",
            made_by=name,
            groups=groups,
            door=door,
            conversation_id=conversation_id,
            for_seconds=for_seconds,
            from_request=from_request,
        )
    except (BadGrant, ConfigError) as err:
        raise CliError(str(err), EXIT_USAGE) from None
    except (GrantRefused, UnknownGrant) as err:
        raise refused(str(err)) from None


async def make(session: Session, grant: Grant, groups: list[str]) -> MadeGrant:
    """Store it and approve what waits that it covers; Temporal is reached only for those."""
    from doors.grants import make_grant

    try:
        return await make_grant(session.client, session.settings, session.store(), grant, groups)
    except CliError as err:
        raise CliError(f"granted {grant.grant_id}, but the calls waiting were not approved: {err}", err.code) from None


def scope_text(grant: Grant) -> str:
    if grant.scope == "everywhere":
        return "everywhere"
    return f"in conversation {grant.conversation_id} and its subagents"


def announce(made: MadeGrant) -> None:
    grant = made.grant
    until = f"until {grant.expires_at.isoformat()}" if grant.expires_at else "until revoked"
    print(shown(f"Granted {grant.grant_id}: {grant.pattern} {scope_text(grant)}, {until}, by {grant.made_by}."))
    if made.approved:
        print(f"Approved {len(made.approved)} waiting call(s) it covers: {shown(', '.join(made.approved))}")
    note(f"Revoke with: python starter.py grants revoke {grant.grant_id}")


def status_of(grant: Grant, now: datetime) -> str:
    if grant.revoked_at is not None:
        return f"revoked by {grant.revoked_by or 'unknown'} {short_time(grant.revoked_at.isoformat())}"
    return "active" if grant.active(now) else "expired"


def listed(grant: Grant, now: datetime) -> dict[str, Any]:
    return {**grant.model_dump(mode="json"), "status": status_of(grant, now).split()[0]}


async def _list(args: argparse.Namespace, session: Session) -> int:
    now = datetime.now(UTC)
    found = await session.store().grants(include_ended=args.all, now=now)
    if args.json:
        print_json([listed(grant, now) for grant in found])
        return EXIT_OK
    if not found:
        print("No grant." if args.all else "No grant is active.")
        return EXIT_OK
    rows = [
        [
            grant.grant_id,
            grant.pattern,
            "everywhere" if grant.scope == "everywhere" else grant.conversation_id,
            grant.made_by,
            grant.door,
            short_time(grant.created_at.isoformat()),
            short_time(grant.expires_at.isoformat()) if grant.expires_at else "until revoked",
            status_of(grant, now),
        ]
        for grant in found
    ]
    print(table(["GRANT", "PATTERN", "SCOPE", "BY", "DOOR", "MADE", "EXPIRES", "STATUS"], rows))
    return EXIT_OK


async def _revoke(args: argparse.Namespace, session: Session) -> int:
    from temporalio.service import RPCError

    from cli.users import who_decides
    from doors.grants import UnknownGrant, revoke

    name, _, _ = await who_decides(args, session)
    try:
        grant = await revoke(session.client, session.store(), args.grant_id, name)
    except UnknownGrant as err:
        raise refused(str(err)) from None
    except (RPCError, CliError) as err:
        why = err.message if isinstance(err, RPCError) else str(err)
        raise CliError(f"revoked {args.grant_id}, but its conversation was not told to forget it: {why}") from None
    if args.json:
        print_json(listed(grant, datetime.now(UTC)))
        return EXIT_OK
    assert grant.revoked_at is not None
    print(
        shown(f"Revoked {grant.grant_id} ({grant.pattern}): by {grant.revoked_by} at {grant.revoked_at.isoformat()}.")
    )
    return EXIT_OK


def check_grant_usage(args: argparse.Namespace, ids: list[str]) -> None:
    """`--grant` makes one grant from one call; `--for` and `--everywhere` describe that grant."""
    if getattr(args, "grant", None) is None:
        if getattr(args, "grant_for", None) is not None or getattr(args, "everywhere", False):
            raise CliError("--for and --everywhere describe a grant: give --grant PATTERN too", EXIT_USAGE)
        return
    if len(ids) != 1:
        raise CliError("--grant makes a grant from one call: give exactly one REQUEST_ID", EXIT_USAGE)
    if args.always:
        raise CliError("--always already allows the whole tool here: give either it or --grant", EXIT_USAGE)


async def grant_for_approval(
    args: argparse.Namespace, session: Session, row: dict[str, Any] | None, decision: DecisionInput
) -> Grant | None:
    """The grant `approve --grant` makes, checked before the call is approved: the call itself must
    match the pattern (exit 2), and the approver must be admitted to grant it (exit 3)."""
    if getattr(args, "grant", None) is None or row is None:  # an unknown request is refused before
        return None
    from cli.output import tool_call_text
    from doors.grant_checks import BadGrant, row_matched, valid_pattern
    from doors.supplied_values import grant_refusal

    not_repeatable = grant_refusal(row)
    if not_repeatable is not None:
        raise refused(not_repeatable)
    try:
        pattern = valid_pattern(args.grant)
    except BadGrant as err:
        raise CliError(str(err), EXIT_USAGE) from None
    if not row_matched(pattern, row):
        call = tool_call_text(row["tool_name"], row["arguments"])
        raise CliError(f"{pattern} does not cover the call it would be made from: {call}", EXIT_USAGE)
    scope = "everywhere" if args.everywhere else "conversation"
    name = decision.decided_by or ""
    grant = await planned(
        session, pattern, name, decision.groups, scope, row["conversation_id"], args.grant_for, "cli", row["request_id"]
    )
    return grant


async def keep_always(session: Session, row: dict[str, Any], decided_by: str) -> None:
    """An always-allow, kept as a grant too, so `grants list` shows it and `grants revoke` ends it."""
    from doors.grants import record_always

    grant = await record_always(session.store(), row, decided_by)
    print(f"  kept as grant {grant.grant_id} (ends with: python starter.py grants revoke {grant.grant_id})")
