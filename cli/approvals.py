"""`pending`, `approve`, `deny`: the approvals inbox from the command line.

`pending` reads the projection only, so it answers with no worker (or Temporal) running. A
decision is checked against the projection first, so a refusal never needs Temporal; then
control.send_decision claims it (the first decision wins at once) and sends it to the workflow
by the `decide` update; when no worker answers in time it goes by signal, which the server keeps
even while no worker runs (doors/decision_delivery.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CliError, paged, refused
from cli.grants import announce, check_grant_usage, grant_for_approval, keep_always, make
from cli.output import more_pages, note, print_json, short_time, shown, table, tool_call_text, tool_origin_text
from cli.questions import print_questions
from cli.temporal import Session, rpc
from core.conversation_model import DecisionInput

if TYPE_CHECKING:
    from core.conversation_model import Decision
    from core.grants import Grant
    from storage.store import ProjectionStore


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
        await print_questions(store)
        return EXIT_OK
    print(
        table(
            [
                "REQUEST",
                "TOOL CALL (exactly as it will run)",
                "ARGS HASH",
                "FROM",
                "CONVERSATION",
                "REQUESTED",
                "STATUS",
            ],
            [
                [
                    shown(row["request_id"]),
                    tool_call_text(row["tool_name"], row["arguments"]),
                    row["args_hash"],
                    tool_origin_text(row["tool"]),
                    conversation_text(row["conversation_id"], row.get("parent_id")),
                    short_time(row["created_at"]),
                    row["status"],
                ]
                for row in rows
            ],
        )
    )
    for conversation_id in sorted({row["conversation_id"] for row in rows if row["conversation_failed"]}):
        print(f"Conversation {conversation_id} failed: {shown(failed[conversation_id] or 'no reason recorded')}")
    note(
        "Decide with: python starter.py approve REQUEST... [--always] | approve REQUEST --grant PATTERN"
        " | deny REQUEST... --reason TEXT | edit REQUEST --set NAME=VALUE"
    )
    await print_questions(store)
    return EXIT_OK


def conversation_text(conversation_id: str, parent_id: str | None) -> str:
    """Which conversation asks; a subagent's says whom it works for."""
    return shown(conversation_id if parent_id is None else f"{conversation_id} (subagent of {parent_id})")


async def refusal_of(
    store: ProjectionStore, row: dict[str, Any] | None, decision: DecisionInput, conversation_id: str | None
) -> str | None:
    """Why this decision must not be sent, judged from the projection by the rule the workflow
    applies (core/refusals.py); None when it may go. A refusal is counted for the metrics. A
    claimed but unrecorded decision is refused by send_decision, which also re-delivers it."""
    from core.refusals import decision_refusal
    from storage.claims import facts_from_row

    refused = decision_refusal(None if row is None else facts_from_row(row), decision, conversation_id)
    if refused is None:
        return None
    await store.count_refusal(refused.error_type, decision.door)
    return refused.message


async def decide(args: argparse.Namespace, session: Session) -> int:
    """The refusal checks need only the projection, so a refused decision never connects to Temporal.

    Several request ids are one batch: every call it covers is listed first, each gets its own
    decision, and one refused call does not stop the others (the exit status is then 3)."""
    ids = list(dict.fromkeys(args.request_ids))
    if args.args_hash is not None and len(ids) != 1:
        raise CliError("--args-hash binds one decision to one request: give exactly one REQUEST_ID", EXIT_USAGE)
    if getattr(args, "supply", None) and len(ids) != 1:
        raise CliError("--supply goes with one request: give exactly one REQUEST_ID", EXIT_USAGE)
    check_grant_usage(args, ids)
    store = session.store()
    rows = {request_id: await store.approval(request_id) for request_id in ids}
    decisions, decider = await _decisions(args, session, rows)
    refusals = {}
    for rid in ids:
        why = await refusal_of(store, rows[rid], decisions[rid], args.conversation)
        if why is not None:
            refusals[rid] = why
    if len(ids) == 1 and refusals:
        raise refused(refusals[ids[0]])
    granting = await grant_for_approval(args, session, rows[ids[0]], decisions[ids[0]]) if len(ids) == 1 else None
    if len(ids) > 1:
        print(f"{_VERBS[_decision(args)]} {len(ids)} calls:")
        for request_id in ids:
            row = rows[request_id]
            call = tool_call_text(row["tool_name"], row["arguments"]) if row is not None else "(unknown request)"
            print(f"  {shown(request_id)}  {call}")
    todo = [(row, decisions[rid]) for rid, row in rows.items() if rid not in refusals and row is not None]
    failures = await _send_all(session, todo, refusals, decider) if todo else {}
    await _grants_after(session, todo, {**refusals, **failures}, granting)
    for request_id in ids:
        why = refusals.get(request_id) or failures.get(request_id)
        if why is not None:
            print(f"error: {shown(why)}", file=sys.stderr)
    # Refused (unknown, decided, stale, ended, not an approver) is 3; Temporal unreachable for some is 1.
    return EXIT_REFUSED if refusals else (EXIT_FAILED if failures else EXIT_OK)


async def _grants_after(
    session: Session, todo: list[tuple[dict[str, Any], DecisionInput]], unsent: dict[str, str], granting: Grant | None
) -> None:
    """What an approval leaves standing: the grant of `--grant`, the always-allow of `--always`."""
    for row, request in todo:
        if row["request_id"] in unsent:
            continue
        if granting is not None:
            announce(await make(session, granting, request.groups))
        elif request.decision == "always_allow" and request.decided_by:
            await keep_always(session, row, request.decided_by)


_VERBS = {"allow": "Approved", "always_allow": "Approved (always for this tool)", "deny": "Denied"}


def _decision(args: argparse.Namespace) -> Decision:
    return "deny" if args.command == "deny" else ("always_allow" if args.always else "allow")


async def _decisions(
    args: argparse.Namespace, session: Session, rows: dict[str, dict[str, Any] | None]
) -> tuple[dict[str, DecisionInput], str]:
    """One decision per request, by the CLI's principal, each bound to the arguments this command
    read and prints (or to the hash the person gave); and who decides, as printed."""
    from cli.supplied import sealed_supplies
    from cli.users import who_decides

    decided_by, groups, how = await who_decides(args, session)
    decider = f"{decided_by} ({how}; groups: {', '.join(groups) or 'none'})"
    decisions = {
        rid: DecisionInput(
            request_id=rid,
            decision=_decision(args),
            reason=args.reason,
            decided_by=decided_by,
            args_hash=args.args_hash or (row["args_hash"] if row is not None else None),
            door="cli",
            principal=decided_by,
            groups=groups,
            supplied=sealed_supplies(getattr(args, "supply", None), session.settings, rid),
        )
        for rid, row in rows.items()
    }
    return decisions, decider


async def _send_all(
    session: Session, todo: list[tuple[dict[str, Any], DecisionInput]], refusals: dict[str, str], decider: str
) -> dict[str, str]:
    """Send each decision in turn; adds the refused ones to refusals, returns the undelivered ones."""
    from core.contract import ERROR_UNDELIVERED
    from doors.control import send_batch

    client = await session.client()
    requests = [request for _, request in todo]
    results = await rpc(send_batch(client, session.settings, requests, session.store()), "sending the decisions")
    failures: dict[str, str] = {}
    for (row, request), result in zip(todo, results, strict=True):
        if result.error_type is not None:
            into = failures if result.error_type == ERROR_UNDELIVERED else refusals
            into[row["request_id"]] = result.message or result.error_type
            continue
        print(f"{_VERBS[request.decision]}: {tool_call_text(row['tool_name'], row['arguments'])}")
        where = f"request {row['request_id']} in conversation {row['conversation_id']}, decided by {decider}"
        print(f"  {shown(where)} (arguments {request.args_hash})")
        if request.supplied:  # that they were supplied, never what
            print(f"  supplied: {', '.join(sorted(request.supplied))} (sealed for this request)")
    return failures
