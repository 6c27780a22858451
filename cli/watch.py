"""`watch CONVERSATION`: follow a conversation until its turn idles or waits for a person.

The projection's event log is the timeline (it works with no worker running); when a worker
answers the bounded state query, new transcript messages are shown too. The reply the model is
writing streams in as it comes, as one labelled block that other lines wait for
(cli/stream_printer.py), then shows again as the recorded message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from cli.conversations import query_state, transcript_lines
from cli.errors import EXIT_OK, CliError, refused
from cli.output import note, short_time, shown
from cli.stream_printer import StreamPrinter
from cli.temporal import Session

SETTLED = {"idle", "awaiting_approval", "failed", "closed"}
POLL_SECONDS = 0.5
QUERY_SECONDS = 2.0


def event_line(event: dict[str, Any]) -> str:
    payload = json.dumps(event["payload"], ensure_ascii=False) if event["payload"] else ""
    return shown(f"[{short_time(event['created_at'])}] {event['event_type']} {payload}".rstrip())


async def _read(
    session: Session, conversation_id: str, after: int
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    store = session.store()
    events, _ = await store.events(after, conversation_id)
    return events, await store.conversation(conversation_id)


async def waiting_subagent(session: Session, conversation_id: str) -> str | None:
    """A subagent below this conversation (at any depth) that waits for a person, if one does."""
    for child in await session.store().subagents(conversation_id):
        if child["turn_status"] == "awaiting_approval":
            return str(child["conversation_id"])
        if child["turn_status"] == "running" and (deeper := await waiting_subagent(session, child["conversation_id"])):
            return deeper
    return None


class _Follower:
    def __init__(self, session: Session, conversation_id: str) -> None:
        self.session = session
        self.conversation_id = conversation_id
        self.last_event = 0
        self.seen_messages = 0
        self.worker_answers: bool | None = None
        self.stream = StreamPrinter()

    async def state(self) -> dict[str, Any] | None:
        try:
            state = await query_state(self.session, self.conversation_id, QUERY_SECONDS)
        except CliError as err:
            if err.code != 1:  # an unknown conversation is an answer, not a transient failure
                raise
            state = None
        if (state is not None) != self.worker_answers:
            self.worker_answers = state is not None
            if state is None:
                note("No worker answers: following the projection's events only.")
        return state

    def print_messages(self, state: dict[str, Any] | None) -> None:
        """New messages by their position in the whole transcript, so a compaction (which moves
        older messages to the archive) neither repeats nor skips any."""
        if state is None:
            return
        body = [m for m in state["messages"] if m["role"] != "system"]
        first = state.get("archived_messages", 0)
        for position, message in enumerate(body, start=first):
            if position >= self.seen_messages:
                for line in transcript_lines(message):
                    self.stream.say(line)
        self.seen_messages = max(self.seen_messages, first + len(body))

    def print_events(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            self.last_event = event["event_id"]
            if event["event_type"] == "message.delta":
                self.stream.show(event["payload"])
                continue
            self.stream.say(event_line(event))


async def watch(args: argparse.Namespace, session: Session) -> int:
    follower = _Follower(session, args.conversation)
    state = await follower.state()
    events, row = await _read(session, args.conversation, 0)
    if state is not None:
        if state.get("archived_messages"):
            note(f"{state['archived_messages']} earlier message(s) were compacted; `show` prints them.")
        follower.print_messages(state)  # the transcript so far stands for the past events
        follower.last_event = events[-1]["event_id"] if events else 0
    elif row is None:
        raise refused(f"no worker answered and the projection has no conversation {args.conversation}")
    else:
        follower.print_events(events)
    while True:
        # The state first, then the events: the log is then at least as new as the transcript, so
        # the end of a reply the transcript holds is read before the messages that follow it.
        state = await follower.state()
        events, row = await _read(session, args.conversation, follower.last_event)
        follower.print_messages(state)
        follower.print_events(events)
        follower.stream.release_if_quiet()
        status = (state or {}).get("turn_status") or (row or {}).get("turn_status")
        projected = (row or {}).get("turn_status")
        if not args.follow and projected in SETTLED and status in SETTLED:
            break
        # A parent whose subagent waits for a person waits for that person too.
        if not args.follow and status == "running" and (subagent := await waiting_subagent(session, args.conversation)):
            follower.stream.finish()
            print(f"Conversation {args.conversation} is running; its subagent {shown(subagent)} is awaiting_approval.")
            note(f"See what waits with: python starter.py pending --conversation {subagent}")
            return EXIT_OK
        await asyncio.sleep(POLL_SECONDS)
    follower.stream.finish()
    print(f"Conversation {args.conversation} is {status}.")
    if status == "awaiting_approval":
        note(f"See what waits with: python starter.py pending --conversation {args.conversation}")
    return EXIT_OK
