"""`start`, `send`, `show`, `conversations`: conversations from the command line.

`show` asks the workflow (a bounded query: a query needs a worker) and, when no worker answers,
says so and shows what the projection holds instead of hanging.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.errors import EXIT_OK, CliError, paged, refused
from cli.output import more_pages, note, print_json, short_time, shown, table, tool_call_text
from cli.temporal import Session, rpc

SUMMARY_NAME = "conversation_summary"  # core.compaction.SUMMARY_NAME, without importing pydantic
STATUS_MARKS = {"awaiting_approval": "●", "running": "○", "failed": "✗"}


async def start(args: argparse.Namespace, session: Session) -> int:
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from cli.users import who_decides
    from doors.control import start_conversation

    starter, _, _ = await who_decides(args, session)  # self-approval rules refuse them their own calls
    client = await session.client()
    try:
        conversation_id = await rpc(
            start_conversation(client, session.settings, args.message, args.id, started_by=starter),
            "starting the conversation",
        )
    except WorkflowAlreadyStartedError:
        raise refused(f"conversation {args.id} already exists") from None
    print(conversation_id)
    note(f"Follow it with: python starter.py watch {conversation_id}")
    return EXIT_OK


async def send(args: argparse.Namespace, session: Session) -> int:
    from doors.control import send_message

    client = await session.client()
    await rpc(send_message(client, args.conversation, args.message), f"sending to {args.conversation}")
    print(f"Sent to {args.conversation}.")
    return EXIT_OK


async def conversations(args: argparse.Namespace, session: Session) -> int:
    page = await paged(session.store().conversations(args.limit, args.after, args.status))
    rows = page.items
    more_pages(page.next)
    if args.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        print("No conversation yet. Start one with: python starter.py start 'write hello to notes.txt'")
        return EXIT_OK
    # A tool waiting for a gone host is said beside the status, in a column shown only when one waits.
    notes = [host_wait_note(r) for r in rows]
    print(
        table(
            ["", "CONVERSATION", "STATUS", "PENDING", "UPDATED"] + (["NOTE"] if any(notes) else []),
            [
                [
                    STATUS_MARKS.get(r["turn_status"], " "),
                    shown(r["conversation_id"]),
                    r["turn_status"],
                    r["pending_count"],
                    short_time(r["updated_at"]),
                ]
                + ([note] if any(notes) else [])
                for r, note in zip(rows, notes, strict=True)
            ],
        )
    )
    return EXIT_OK


def host_wait_note(row: dict[str, Any]) -> str:
    """`waiting for host pod-a: ...` when a tool of the conversation waits for a gone host, else ''."""
    from core.host_wait import host_wait_text

    return shown(host_wait_text(row["host_wait"])) if row.get("host_wait") else ""


async def query_state(session: Session, conversation_id: str, timeout: float) -> dict[str, Any] | None:
    """The workflow's state, or None when no worker answers within timeout seconds."""
    from datetime import timedelta

    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError, RPCStatusCode

    from doors.control import get_state
    from payload_store import PayloadStoreError

    client = await session.client()
    try:
        state = await get_state(client, conversation_id, timedelta(seconds=timeout))
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise refused(f"no conversation {conversation_id}") from None
        if err.status == RPCStatusCode.UNAVAILABLE:
            raise CliError(f"Temporal is not reachable: {err}") from None
        return None  # deadline exceeded: no worker polls this task queue
    except (WorkflowQueryFailedError, TimeoutError):
        return None
    except PayloadStoreError as err:  # the answer is stored, and this process cannot read it
        raise CliError(f"cannot read {conversation_id}'s state: {err}") from None
    return state.model_dump(mode="json")


async def _projected_state(session: Session, conversation_id: str) -> dict[str, Any]:
    store = session.store()
    row = await store.conversation(conversation_id)
    approvals = (await store.approvals("pending", conversation_id)).items
    if row is None:
        raise refused(f"no worker answered and the projection has no conversation {conversation_id}")
    return {**row, "messages": None, "pending_approvals": approvals, "source": "projection"}


async def show(args: argparse.Namespace, session: Session) -> int:
    from cli.request_view import is_request_id, show_request

    if is_request_id(args.conversation):  # one approval request, whole
        return await show_request(args, session)
    state = await query_state(session, args.conversation, args.timeout)
    if state is None:
        state = await _projected_state(session, args.conversation)
        if state["turn_status"] == "failed":
            note("The conversation's workflow cannot answer: showing the projection.")
        else:
            note(
                f"No worker answered within {args.timeout:g}s (is `python worker.py` running?): showing the projection."
            )
    else:
        state["source"] = "worker"
    row = await session.store().conversation(args.conversation)
    state["parent_id"] = row.get("parent_id") if row else None
    # The workflow's answer says nothing of hosts: the projection holds its host and any wait for it.
    state["tool_host"] = row.get("tool_host") if row else None
    state["host_wait"] = row.get("host_wait") if row else None
    state["subagents"] = await session.store().subagents(args.conversation)
    # The trace each request was asked in (OTEL_* tracing on), the newest one as the conversation's.
    traced = {
        row["request_id"]: row["trace_id"] for row in (await session.store().approvals("all", args.conversation)).items
    }
    state["trace_ids"] = {request_id: trace for request_id, trace in traced.items() if trace}
    state["trace_id"] = next(reversed(state["trace_ids"].values()), None)
    archived = await session.store().archived_messages(args.conversation)
    # The archive is written before messages leave the workflow, so it may be ahead of the answer.
    state["archived"] = archived[: state["archived_messages"]] if state["messages"] is not None else archived
    if args.json:
        print_json(state)
        return EXIT_OK
    print(f"Conversation {shown(state['conversation_id'])}: {state['turn_status']}")
    if state["host_wait"]:
        print(f"  {host_wait_note(state)}")
    if state["tool_host"]:
        print(f"  tools run on host: {shown(state['tool_host'])}")
    if state.get("last_error"):
        print(f"  last error: {shown(state['last_error'])}")
    if state["parent_id"]:
        print(f"  subagent of: {shown(state['parent_id'])}")
    for child in state["subagents"]:
        print(f"  subagent: {shown(child['conversation_id'])} ({child['turn_status']})")
    from storage.audit import switch_text

    for switch in await session.store().switches(args.conversation):
        print(f"  {shown(switch_text(switch))} at {short_time(switch['created_at'])}")
    for approval in state["pending_approvals"]:
        call = tool_call_text(approval["tool_name"], approval["arguments"])
        print(f"  waits for approval: {shown(approval['request_id'])}  {call}")
    if state["messages"] is None and not state["archived"]:
        print("  (transcript unavailable until a worker runs)")
        return EXIT_OK
    print()
    for message in state["archived"]:
        for line in transcript_lines(message):
            print(line)
    if state["messages"] is None:
        print("-- the more recent messages need a running worker (python worker.py) to be shown --")
        return EXIT_OK
    if state["archived"]:
        count = len(state["archived"])
        print(f"-- the {count} message(s) above were compacted: the model sees this summary instead --")
    for message in state["messages"]:
        for line in transcript_lines(message):
            print(line)
    return EXIT_OK


def transcript_lines(message: dict[str, Any]) -> list[str]:
    """One message as a person reads it; model text escaped, tool calls exactly as proposed."""
    role = message["role"]
    if role == "system":
        if message.get("name") == SUMMARY_NAME:
            return [f"summary for the model: {shown(message.get('content') or '', keep_newlines=True)}"]
        return []
    content = shown(message.get("content") or "", keep_newlines=True)
    if role == "tool":
        head = shown(f"tool {message.get('name') or ''} [{message.get('tool_call_id')}]:")
        return [f"{head} {content}"]
    lines = [f"{role}: {content}"] if content or not message.get("tool_calls") else [f"{role}:"]
    for call in message.get("tool_calls") or []:
        lines.append(f"  -> {tool_call_text(call['name'], call['arguments'])}  [{shown(call['id'])}]")
    return lines
