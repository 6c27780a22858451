"""One AG-UI run over a conversation: decide the resumed interrupts, take the new user messages,
then stream what the conversation does until it is idle, failed, or waiting for people again.

The thread id is the conversation id. Nothing the run does lives in the connection: decisions go
through the same claim and update (or signal) as the inbox's buttons, messages by signal-with-start, and the
stream is read back from the read model and the workflow's own state. A client that leaves loses
nothing; a later run of the same thread finds the same waiting requests and ends with them again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    ResumeEntry,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    StateSnapshotEvent,
    UserMessage,
)
from fastapi import Request
from temporalio.client import Client
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from core.contract import ERROR_CONVERSATION_CLOSED, ERROR_UNDELIVERED, ERROR_UNKNOWN_APPROVAL
from core.conversation_model import ApprovalRecord, ConversationState
from core.ids import InvalidConversationId, check_conversation_id
from core.refusals import DecisionRefused
from doors import control
from storage.agui_marks import mark_taken, was_taken
from storage.store import ProjectionStore
from ui.agui_interrupts import BadResume, decision_for, interrupt_for
from ui.agui_translate import RunTranslator, encode
from ui.errors import NotFound
from ui.open_streams import StreamCredential
from ui.route_support import identity, settings_of, store_of
from ui.security import principal_of
from ui.temporal import WorkerUnavailable, query_state

WAIT_SECONDS = 0.25
KEEPALIVE_SECONDS = 15.0
EVENT_BATCH = 200


class RunRefused(Exception):
    """The run cannot go on: RUN_ERROR with this message and code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Run:
    request: Request
    client: Client
    run_input: RunAgentInput
    credential: StreamCredential

    @property
    def store(self) -> ProjectionStore:
        return store_of(self.request)


def turn_number(state: ConversationState | None) -> int:
    if state is None or not state.turn_id:
        return 0
    return int(state.turn_id.rsplit("_", 1)[-1])


def waiting(state: ConversationState | None) -> list[ApprovalRecord]:
    return [] if state is None else [r for r in state.pending_approvals if r.resolution is None]


async def current_state(client: Client, conversation_id: str) -> ConversationState | None:
    """The workflow's state; None when no conversation has this id."""
    try:
        return await query_state(client, conversation_id)
    except NotFound:
        return None
    except WorkerUnavailable as err:
        raise RunRefused(f"no worker answered for conversation {conversation_id}: {err}", "WorkerUnavailable") from None


async def stream_run(run: Run) -> AsyncGenerator[str, None]:
    """Everything after RUN_STARTED; a refusal on the way raises RunRefused."""
    conversation_id = run.run_input.thread_id
    try:
        check_conversation_id(conversation_id)
    except InvalidConversationId as err:
        raise RunRefused(f"threadId: {err}", "InvalidThreadId") from None
    store = run.store
    after = await store.latest_event_id()
    before = await current_state(run.client, conversation_id)
    decided = await decide(run, before)
    taken = await take_messages(run, before)
    if before is None and not taken:
        raise RunRefused(f"thread {conversation_id} does not exist yet: a new thread needs a user message", "NoMessage")
    target = turn_number(before) + taken
    translator = RunTranslator(run.run_input.run_id, before.messages if before else [])
    last_snapshot: dict[str, Any] | None = None
    last_sent = time.monotonic()
    while not await run.request.is_disconnected():
        await run.credential.check()
        mark = await store.event_mark()
        state = await current_state(run.client, conversation_id)
        if state is None:
            raise RunRefused(f"conversation {conversation_id} is not running in Temporal", ERROR_CONVERSATION_CLOSED)
        events, after = await read_events(store, conversation_id, after)
        out: list[BaseEvent] = [*translator.deltas(events), *translator.transcript(state.messages)]
        snapshot = state_snapshot(state)
        if snapshot != last_snapshot:
            out.append(StateSnapshotEvent(snapshot=snapshot))
            last_snapshot = snapshot
        for event in out:
            yield encode(event)
        if out:
            last_sent = time.monotonic()
        finished = None if translator.has_open_text else finish(run.run_input, state, target, decided)
        if finished is not None:
            yield encode(finished)
            return
        if time.monotonic() - last_sent > KEEPALIVE_SECONDS:
            last_sent = time.monotonic()
            yield ": keepalive\n\n"
        await run.credential.wait(store.wait_for_events(WAIT_SECONDS, mark))


async def read_events(store: ProjectionStore, conversation_id: str, after: int) -> tuple[list[dict[str, Any]], int]:
    """The conversation's events after `after`, and the position to read from next."""
    found: list[dict[str, Any]] = []
    while True:
        events, _ = await store.events(after, conversation_id, EVENT_BATCH)
        found.extend(events)
        if events:
            after = events[-1]["event_id"]
        if len(events) < EVENT_BATCH:
            return found, after


def state_snapshot(state: ConversationState) -> dict[str, Any]:
    return {
        "conversationId": state.conversation_id,
        "turnStatus": state.turn_status,
        "turnId": state.turn_id,
        "pendingApprovals": [r.request_id for r in waiting(state)],
        "autoApprove": state.auto_approve,
        "lastError": state.last_error,
    }


def finish(run_input: RunAgentInput, state: ConversationState, target: int, decided: set[str]) -> BaseEvent | None:
    """The run's last event once the conversation has taken what was sent and come to rest; None before."""
    if state.turn_status == "closed":
        raise RunRefused(f"conversation {state.conversation_id} is closed", ERROR_CONVERSATION_CLOSED)
    if turn_number(state) < target:
        return None
    open_requests = waiting(state)
    if any(r.request_id in decided and not r.approved_by for r in open_requests):
        return None  # the workflow has not applied a decision of this run yet
    thread_id, run_id = run_input.thread_id, run_input.run_id
    if state.turn_status == "failed":
        raise RunRefused(f"the turn failed: {state.last_error}", "TurnFailed")
    if state.turn_status == "idle":
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=RunFinishedSuccessOutcome())
    if state.turn_status == "awaiting_approval" and open_requests:
        interrupts = [interrupt_for(r) for r in open_requests]
        return RunFinishedEvent(
            thread_id=thread_id, run_id=run_id, outcome=RunFinishedInterruptOutcome(interrupts=interrupts)
        )
    return None


async def decide(run: Run, state: ConversationState | None) -> set[str]:
    """The resume entries as decisions, all checked before the first is sent; the ids decided."""
    entries: list[ResumeEntry] = run.run_input.resume or []
    if not entries:
        return set()
    conversation_id = run.run_input.thread_id
    ids = [e.interrupt_id for e in entries]
    if len(set(ids)) != len(ids):
        raise RunRefused("resume: an interrupt is answered more than once", "DuplicateResume")
    for rid in ids:
        row = await run.store.approval(rid)
        if row is None or row["conversation_id"] != conversation_id:
            raise RunRefused(f"resume: unknown interrupt id {rid} in thread {conversation_id}", ERROR_UNKNOWN_APPROVAL)
    missing = [r.request_id for r in waiting(state) if r.request_id not in ids]
    if missing:
        raise RunRefused(f"resume: missing entries for interrupt(s) {', '.join(missing)}", "MissingResume")
    who = await identity(run.request, None)
    try:
        decisions = [decision_for(entry, who) for entry in entries]
    except BadResume as err:
        raise RunRefused(str(err), "InvalidResume") from None
    settings = settings_of(run.request)
    for decision in decisions:
        try:
            await control.send_decision(run.client, settings, decision, run.store)
        except DecisionRefused as err:
            raise RunRefused(f"resume: {err}", err.error_type) from None
        except RPCError as err:
            closed = err.status == RPCStatusCode.NOT_FOUND
            raise RunRefused(
                f"resume: {decision.request_id}: {err.message}",
                ERROR_CONVERSATION_CLOSED if closed else ERROR_UNDELIVERED,
            ) from None
    return set(ids)


def new_user_messages(run_input: RunAgentInput) -> list[UserMessage]:
    """The user messages after the last message that is not one: what the client added since it
    last heard the conversation. Everything before is already in the conversation's transcript."""
    trailing: list[UserMessage] = []
    for message in reversed(run_input.messages):
        if not isinstance(message, UserMessage):
            break
        trailing.append(message)
    return list(reversed(trailing))


def message_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(str(getattr(part, "text", "")) for part in message.content if getattr(part, "type", "") == "text")


async def take_messages(run: Run, state: ConversationState | None) -> int:
    """Send the new user messages (a message id already taken is skipped); how many were sent."""
    conversation_id = run.run_input.thread_id
    person = await principal_of(run.request)
    settings, taken = settings_of(run.request), 0
    for message in new_user_messages(run.run_input):
        text = message_text(message).strip()
        if not text or await was_taken(run.store, conversation_id, message.id):
            continue
        if state is not None and state.turn_status == "closed":
            raise RunRefused(f"conversation {conversation_id} is closed", ERROR_CONVERSATION_CLOSED)
        try:
            await control.send_or_start(
                run.client, settings, conversation_id, text, person.name if person is not None else None
            )
        except WorkflowAlreadyStartedError:
            ended = f"conversation {conversation_id} has ended; start a new thread"
            raise RunRefused(ended, ERROR_CONVERSATION_CLOSED) from None
        except RPCError as err:
            raise RunRefused(f"Temporal refused the message: {err.message}", ERROR_UNDELIVERED) from None
        await mark_taken(run.store, conversation_id, message.id)
        taken += 1
    return taken
