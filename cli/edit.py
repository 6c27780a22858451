"""`edit`: approve a pending call with arguments you changed.

The new arguments are the call's as `pending` shows them with `--set NAME=VALUE` applied (VALUE
read as JSON when it parses, else as text), or a whole new object with `--args JSON`. The edit
is bound to the arguments this command read (or `--args-hash`), and the workflow checks it
before it is applied (see doors/edit_control.py): the tool's schema, the deny rules and who may
decide the edited call. The command prints what changed.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, refused
from cli.output import shown, tool_call_text
from cli.temporal import Session, rpc


def new_arguments(args: argparse.Namespace, original: dict[str, Any]) -> dict[str, Any]:
    """The edited arguments from --args or --set (exactly one of them); bad usage exits 2."""
    if (args.arguments is None) == (not args.changes):
        raise CliError("give the new arguments with --args JSON or with --set NAME=VALUE (not both)", EXIT_USAGE)
    if args.arguments is not None:
        try:
            edited = json.loads(args.arguments)
        except ValueError as err:
            raise CliError(f"--args is not valid JSON: {err}", EXIT_USAGE) from None
        if not isinstance(edited, dict):
            raise CliError("--args must be a JSON object", EXIT_USAGE)
        return edited
    edited = dict(original)
    for change in args.changes:
        name, sep, raw = change.partition("=")
        if not sep or not name:
            raise CliError(f"--set {change!r} is not NAME=VALUE", EXIT_USAGE)
        try:
            edited[name] = json.loads(raw)
        except ValueError:
            edited[name] = raw
    return edited


async def edit(args: argparse.Namespace, session: Session) -> int:
    from cli.approvals import refusal_of
    from cli.supplied import sealed_supplies
    from cli.users import who_decides
    from core.contract import ERROR_EDIT_UNCHECKED
    from core.conversation_model import DecisionInput
    from core.edits import changes
    from core.refusals import DecisionRefused
    from doors.control import send_decision

    row = await session.store().approval(args.request_id)
    if row is None:
        raise refused(f"no approval request {args.request_id}")
    edited = new_arguments(args, row["arguments"])
    decided_by, groups, how = await who_decides(args, session)
    decision = DecisionInput(
        request_id=args.request_id,
        decision="edit",
        reason=args.reason,
        decided_by=decided_by,
        args_hash=args.args_hash or row["args_hash"],
        arguments=edited,
        door="cli",
        principal=decided_by,
        groups=groups,
        supplied=sealed_supplies(args.supply, session.settings, args.request_id),
    )
    why = await refusal_of(session.store(), row, decision, args.conversation)
    if why is not None:
        raise refused(why)
    client = await session.client()
    try:
        await rpc(send_decision(client, session.settings, decision, session.store()), "sending the edit")
    except DecisionRefused as err:
        if err.error_type == ERROR_EDIT_UNCHECKED:
            raise CliError(str(err), EXIT_FAILED) from None
        raise refused(str(err)) from None
    print(f"Approved with changed arguments: {tool_call_text(row['tool_name'], edited)}")
    for line in changes(row["arguments"], edited):
        print(f"  {shown(line)}")
    where = (
        f"request {row['request_id']} in conversation {row['conversation_id']},"
        f" decided by {decided_by} ({how}; groups: {', '.join(groups) or 'none'})"
    )
    print(f"  {shown(where)} (shown arguments {decision.args_hash})")
    return EXIT_OK
