"""`pending`, `approve`, `deny`: the approvals inbox from the command line.

`pending` reads the projection only, so it answers with no worker (or Temporal) running. A
decision is checked against the projection first, so a refusal never needs Temporal; then
control.send_decision claims it (the first decision wins at once) and signals the workflow,
which keeps it even while no worker runs.
"""

from __future__ import annotations

import argparse
import getpass
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_OK, paged, refused
from cli.output import more_pages, note, print_json, short_time, shown, table, tool_call_text, tool_origin_text
from cli.temporal import Session, rpc

if TYPE_CHECKING:
    from workflows.models import Decision


async def pending(args: argparse.Namespace, session: Session) -> int:
    store = session.store()
    page = await paged(store.approvals("pending", args.conversation, args.limit, args.after))
    rows = page.items
    more_pages(page.next)
    failed = {c["conversation_id"]: c["last_error"] for c in (await store.conversations(status="failed")).items}
    for row in rows:
        # A failed conversation cannot apply a decision until it recovers: say so beside its requests.
        row["conversation_failed"] = row["conversation_id"] in failed
        row["conversation_error"] = failed.get(row["conversation_id"])
    if args.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        print("No approval is waiting.")
        return EXIT_OK
    print(
        table(
            ["REQUEST", "TOOL CALL (exactly as it will run)", "FROM", "REQUESTED", "STATUS"],
            [
                [
                    shown(row["request_id"]),
                    tool_call_text(row["tool_name"], row["arguments"]),
                    tool_origin_text(row["tool"]),
                    short_time(row["created_at"]),
                    row["status"],
                ]
                for row in rows
            ],
        )
    )
    for conversation_id in sorted({row["conversation_id"] for row in rows if row["conversation_failed"]}):
        print(f"Conversation {conversation_id} failed: {shown(failed[conversation_id] or 'no reason recorded')}")
    note("Decide with: python starter.py approve REQUEST [--always] | deny REQUEST --reason TEXT")
    return EXIT_OK


def _refusal(row: dict[str, Any] | None, request_id: str, conversation_id: str | None) -> str | None:
    """Why this decision must not be sent, judged from the projection; None when it may go."""
    if row is None:
        return f"no approval request {request_id}"
    if conversation_id is not None and row["conversation_id"] != conversation_id:
        return f"{request_id} belongs to conversation {row['conversation_id']}, not {conversation_id}"
    if row["decision"] is not None:
        return f"{request_id} was already resolved: {row['decision']} by {row['decided_by']}"
    # A claimed but unrecorded decision is refused by send_decision, which also re-delivers it.
    return None


async def decide(args: argparse.Namespace, session: Session) -> int:
    """The refusal check needs only the projection, so a refused decision never connects to Temporal."""
    row = await session.store().approval(args.request_id)
    why = _refusal(row, args.request_id, args.conversation)
    if why is not None:
        raise refused(why)
    assert row is not None
    decision: Decision = "deny" if args.command == "deny" else ("always_allow" if args.always else "allow")

    from control import send_decision
    from projection.claims import DecisionRefused
    from workflows.models import DecisionInput

    client = await session.client()
    decided_by = args.decided_by or getpass.getuser()
    request = DecisionInput(request_id=args.request_id, decision=decision, reason=args.reason, decided_by=decided_by)
    try:
        await rpc(
            send_decision(client, session.settings, request, session.store()),
            f"sending the decision on {args.request_id}",
        )
    except DecisionRefused as err:
        raise refused(str(err)) from None
    verb = {"allow": "Approved", "always_allow": "Approved (always for this tool)", "deny": "Denied"}[decision]
    print(f"{verb}: {tool_call_text(row['tool_name'], row['arguments'])}")
    where = shown(f"request {args.request_id} in conversation {row['conversation_id']}, decided by {decided_by}")
    print(f"  {where}")
    return EXIT_OK
