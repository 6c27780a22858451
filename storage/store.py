"""The read model's one interface: every write, read, claim and event of the projection.

`ProjectionStore(location)` takes `APPROVALS_DB` (a path, `sqlite:///path` or `postgresql://...`);
each method is one transaction on that backend and never blocks the event loop. The worker's
activities write, the CLI and the UI read and claim, a rebuild does both; none of them sees SQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.conversation_model import ApprovalRecord, DecisionInput
from core.grants import Grant
from core.projection_model import (
    ApprovalRequestedProjection,
    ApprovalResolvedProjection,
    CompactionProjection,
    ConversationProjection,
    ProjectionEvent,
)
from core.push_subscription import PushSubscription
from core.refusals import ClaimedDecision, DecisionRefused
from storage import (
    audit,
    claims,
    decision_links,
    fatigue_notices,
    figures,
    grants,
    previous_content,
    push_subscriptions,
    reader,
    sessions,
    stream_events,
    users,
    writes,
)
from storage import hosts as worker_hosts
from storage.backend import Backend, StoreUnavailable, Tx, open_backend, run_short
from storage.reader import ApprovalFilter, Page
from storage.users import Contact, Principal


class ProjectionStore:
    def __init__(self, location: str | Path, delta_retention_seconds: float | None = None) -> None:
        """delta_retention_seconds: a writer prunes streamed pieces older than this (None: never)."""
        self.backend: Backend = open_backend(location, "projection")
        self.location = self.backend.location
        self.delta_retention_seconds = delta_retention_seconds
        self._on_resolved: Callable[[ApprovalRecord], Coroutine[Any, Any, None]] | None = None
        self._followers: set[asyncio.Task[None]] = set()

    def on_resolved(self, follower: Callable[[ApprovalRecord], Coroutine[Any, Any, None]]) -> None:
        """A worker's hook, told of each resolution once it is written, in the background (so a slow
        receiver never delays the tool or the turn): the Slack messages of a decided request."""
        self._on_resolved = follower

    async def close(self) -> None:
        await self.backend.close()

    # Writes: the worker's projection activities, in the workflow's order; each is idempotent.
    async def project_conversation(self, conv: ConversationProjection) -> None:
        await self.backend.run(lambda tx: writes.write_conversation(tx, conv))

    async def project_approval_requested(self, payload: ApprovalRequestedProjection) -> bool:
        return await self.backend.run(lambda tx: writes.write_approval_requested(tx, payload))

    async def keep_trace(self, request_id: str, traceparent: str) -> None:
        await self.backend.run(lambda tx: writes.keep_trace(tx, request_id, traceparent))

    async def project_approval_resolved(self, payload: ApprovalResolvedProjection) -> None:
        """A tool's activity writes it beside its launch, which a worker thread's hop would slow."""
        await run_short(self.backend, lambda tx: writes.write_approval_resolved(tx, payload), autocommit=False)
        if self._on_resolved is not None:
            task = asyncio.create_task(self._on_resolved(payload.approval))
            self._followers.add(task)
            task.add_done_callback(self._followers.discard)

    async def project_approval_changed(self, record: ApprovalRecord) -> None:
        await self.backend.run(lambda tx: writes.write_approval_changed(tx, record))

    async def project_compaction(self, payload: CompactionProjection) -> None:
        await self.backend.run(lambda tx: writes.write_compaction(tx, payload))

    async def append_stream_event(self, event: ProjectionEvent) -> None:
        """A running model call's streamed text (see storage/stream_events.py); the end of a
        reply also prunes old pieces, in a transaction of its own."""
        await self.backend.run(lambda tx: stream_events.append_event(tx, event))
        if self.delta_retention_seconds is not None and stream_events.ends_a_reply(event):
            retention = self.delta_retention_seconds
            await self.backend.run(lambda tx: stream_events.prune_deltas(tx, retention))

    async def keep_previous_content(self, kept: previous_content.PreviousContent, retention_seconds: float) -> None:
        await self.backend.run(lambda tx: previous_content.keep(tx, kept, retention_seconds))

    async def previous_content(self, request_id: str) -> previous_content.PreviousContent | None:
        return await self.backend.run(lambda tx: previous_content.find(tx, request_id), write=False)

    async def mark_execution(self, request_id: str, state: str) -> None:
        await run_short(self.backend, lambda tx: writes.mark_execution(tx, request_id, state))

    async def resolve_stale(
        self, conversation_id: str, resolutions: dict[str, str], keep: set[str], reason: dict[str, str]
    ) -> int:
        """Resolve the conversation's unresolved rows not in `keep`, as `resolutions` say (a rebuild)."""

        async def operation(tx: Tx) -> int:
            fixed = 0
            for request_id in await writes.unresolved_request_ids(tx, conversation_id):
                if request_id in keep or request_id not in resolutions:
                    continue
                fixed += await writes.resolve_stale(
                    tx, request_id, resolutions[request_id], "rebuild", reason[request_id]
                )
            return fixed

        return await self.backend.run(operation)

    async def unresolved_request_ids(self, conversation_id: str) -> list[str]:
        return await self.backend.run(lambda tx: writes.unresolved_request_ids(tx, conversation_id), write=False)

    # Worker hosts: who runs the conversations' tools, and which wait for a host that left.
    async def note_host(self, host: str, host_queue: str, *, stopping: bool = False) -> None:
        """A worker's note that it is up (on start and every ~15 s) or stopping."""
        await self.backend.run(lambda tx: worker_hosts.note_host(tx, host, host_queue, stopping))

    async def set_tool_host(self, conversation_id: str, host: str) -> None:
        """The host the conversation's tools run on (safe before its first projection lands)."""
        await self.backend.run(lambda tx: worker_hosts.set_tool_host(tx, conversation_id, host))

    async def conversations_on_host(self, host: str) -> list[str]:
        """The conversations not closed whose tools run on host."""
        return await self.backend.run(lambda tx: worker_hosts.conversations_on_host(tx, host), write=False)

    async def hosts(self) -> list[dict[str, Any]]:
        """Every known host: its registration, open conversations and tools waiting for it."""
        return await self.backend.run(worker_hosts.list_hosts, write=False)

    async def tools_waiting_by_host(self) -> dict[str, int]:
        """host -> open conversations whose tool waits for it (the metrics' gauge)."""
        return await self.backend.run(worker_hosts.waiting_by_host, write=False)

    # Grants: standing "allow calls like this" by a person, with a scope and a lifetime.
    async def add_grant(self, grant: Grant) -> None:
        await self.backend.run(lambda tx: grants.add_grant(tx, grant))

    async def grants(self, include_ended: bool = False, now: datetime | None = None) -> list[Grant]:
        """Oldest first: the active ones at `now` (default: this moment), or every one ever made."""
        moment = now or datetime.now(UTC)
        return await self.backend.run(lambda tx: grants.list_grants(tx, include_ended, moment), write=False)

    async def grant(self, grant_id: str) -> Grant | None:
        return await self.backend.run(lambda tx: grants.get_grant(tx, grant_id), write=False)

    async def revoke_grant(self, grant_id: str, by: str, at: datetime) -> Grant | None:
        """None: no such grant; one revoked already is returned as it was."""
        return await self.backend.run(lambda tx: grants.revoke_grant(tx, grant_id, by, at))

    async def grants_in_scope(self, conversation_ids: list[str]) -> list[Grant]:
        """Not revoked, everywhere or for one of these conversations; the caller checks `active(now)`."""
        ids = list(dict.fromkeys(conversation_ids))
        return await self.backend.run(lambda tx: grants.grants_in_scope(tx, ids), write=False)

    async def top_conversation(self, conversation_id: str) -> str:
        """The top of the conversation's delegation chain (itself when it has no parent)."""
        return await self.backend.run(lambda tx: grants.top_conversation(tx, conversation_id), write=False)

    # Claims: the deciders' arbiter (first decision wins across every process and host).
    async def claim_decision(self, decision: DecisionInput) -> ClaimedDecision:
        """Claim the request for this decision, or raise DecisionRefused. A connection to the database
        lost on the way (a restart) leaves the claim's fate unknown: it is tried once more, and a
        claim found made by this very decision is this one's."""
        try:
            return await self._claim_decision(decision)
        except StoreUnavailable:
            pass
        try:
            return await self._claim_decision(decision)
        except DecisionRefused as refused:
            if refused.earlier is not None and refused.earlier.decision == decision:
                return refused.earlier
            raise

    async def _claim_decision(self, decision: DecisionInput) -> ClaimedDecision:
        # A single approval is claimed in two statements and no transaction: on PostgreSQL two round
        # trips before the decision is sent instead of six; on SQLite on this thread, when the file is free.
        claimed = await run_short(self.backend, lambda tx: claims.claim_in_autocommit(tx, decision))
        if claimed is not None:
            return claimed
        return await self.backend.run(lambda tx: claims.claim_decision(tx, decision))

    async def release_claim(self, request_id: str) -> None:
        await self.backend.run(lambda tx: claims.release_claim(tx, request_id))

    async def release(self, claimed: ClaimedDecision) -> None:
        """Undo what a claim took for a decision that could not be delivered: the request's claim, or
        for one approval of several, that person's approval alone."""
        decision = claimed.decision
        if claimed.partial:
            await self.backend.run(
                lambda tx: claims.release_partial_approval(tx, decision.request_id, decision.principal)
            )
        else:
            await self.release_claim(decision.request_id)

    # One-time decision links: each use recorded once by its token id (storage/decision_links.py).
    async def record_link_use(self, token_id: str, request_id: str, person: str, decision: str) -> bool:
        """Whether this is the link's first use (False: used already, refuse it)."""
        return await self.backend.run(
            lambda tx: decision_links.record_link_use(tx, token_id, request_id, person, decision)
        )

    async def release_link_use(self, token_id: str) -> None:
        """Give a use back when its decision was refused or could not be delivered."""
        await self.backend.run(lambda tx: decision_links.release_link_use(tx, token_id))

    async def link_use(self, token_id: str) -> dict[str, Any] | None:
        return await self.backend.run(lambda tx: decision_links.link_use(tx, token_id), write=False)

    async def note_rapid_run(self, person: str, count: int, seconds: float) -> dict[str, Any] | None:
        """After an approval: a notice if this person approves faster than anyone reads (recorded once)."""
        return await self.backend.run(lambda tx: fatigue_notices.note_rapid_run(tx, person, count, seconds))

    async def fatigue_notices(self, since: str | None = None, person: str | None = None) -> list[dict[str, Any]]:
        return await self.backend.run(lambda tx: fatigue_notices.list_notices(tx, since, person), write=False)

    async def count_refusal(self, reason: str, door: str | None) -> None:
        """A decision a door refused (unknown, already decided, stale...), counted for the metrics."""
        await self.backend.run(lambda tx: figures.count_refusal(tx, reason, door))

    # Login sessions of the UI, shared by every UI process.
    async def open_session(self, session_hash: str, expires_at: datetime, replaces: str | None = None) -> None:
        await self.backend.run(lambda tx: sessions.open_session(tx, session_hash, expires_at, replaces))

    async def session_is_open(self, session_hash: str) -> bool:
        return await self.backend.run(lambda tx: sessions.session_is_open(tx, session_hash), write=False)

    async def close_session(self, session_hash: str) -> None:
        await self.backend.run(lambda tx: sessions.close_session(tx, session_hash))

    # People who approve, and whom a login session belongs to.
    async def add_user(self, name: str, groups: list[str], asker: bool = False, email: str | None = None) -> str:
        return await self.backend.run(lambda tx: users.add_user(tx, name, groups, asker, email))

    async def set_email(self, name: str, email: str | None) -> bool:
        return await self.backend.run(lambda tx: users.set_email(tx, name, email))

    async def contacts(self) -> list[Contact]:
        return await self.backend.run(users.contacts, write=False)

    async def remove_user(self, name: str) -> bool:
        return await self.backend.run(lambda tx: users.remove_user(tx, name))

    async def list_users(self) -> list[dict[str, Any]]:
        return await self.backend.run(users.list_users, write=False)

    async def groups_of(self, name: str) -> list[str]:
        return await self.backend.run(lambda tx: users.groups_of(tx, name), write=False)

    async def verify_token(self, token: str) -> Principal | None:
        return await self.backend.run(lambda tx: users.verify_token(tx, token), write=False)

    async def verify_asker(self, token: str) -> str | None:
        return await self.backend.run(lambda tx: users.verify_asker(tx, token), write=False)

    async def bind_session(self, session_hash: str, name: str) -> None:
        await self.backend.run(lambda tx: users.bind_session(tx, session_hash, name))

    async def session_person(self, session_hash: str) -> Principal | None:
        return await self.backend.run(lambda tx: users.session_person(tx, session_hash), write=False)

    # Web Push subscriptions: a person's browsers, which the push channel notifies.
    async def save_push_subscription(self, subscription: PushSubscription) -> None:
        await self.backend.run(lambda tx: push_subscriptions.save_subscription(tx, subscription))

    async def remove_push_subscription(self, endpoint: str, person: str) -> bool:
        return await self.backend.run(lambda tx: push_subscriptions.remove_subscription(tx, endpoint, person))

    async def drop_push_subscription(self, endpoint: str) -> None:
        await self.backend.run(lambda tx: push_subscriptions.drop_subscription(tx, endpoint))

    async def push_subscriptions(self, people: list[str] | None) -> list[PushSubscription]:
        """Those of these people (None: everyone's)."""
        return await self.backend.run(lambda tx: push_subscriptions.subscriptions_of(tx, people), write=False)

    # Reads.
    async def approval_figures(self) -> figures.Figures:
        """What the metrics count, from the rows (every door's decisions)."""
        return await self.backend.run(figures.projection_figures, write=False)

    async def audit(self, since: str | None = None) -> list[dict[str, Any]]:
        """Every request and its decision's facts since an ISO time, oldest first."""
        return await self.backend.run(lambda tx: audit.list_audit(tx, since), write=False)

    async def audit_trail(self, since: str | None = None) -> list[dict[str, Any]]:
        """Requests and switches together, oldest first (see audit.list_trail)."""
        return await self.backend.run(lambda tx: audit.list_trail(tx, since), write=False)

    async def shadow_differences(self, since: str | None = None) -> list[dict[str, Any]]:
        """Where the [shadow] rules judged a call otherwise than the live rules, oldest first."""
        return await self.backend.run(lambda tx: audit.list_shadow_differences(tx, since), write=False)

    async def switches(self, conversation_id: str) -> list[dict[str, Any]]:
        """Who closed the conversation and switched its auto-approve, oldest first."""
        return await self.backend.run(lambda tx: audit.list_switches(tx, None, conversation_id), write=False)

    async def conversations(
        self, limit: int | None = None, after: str | None = None, status: str | None = None
    ) -> Page:
        return await self.backend.run(lambda tx: reader.list_conversations(tx, limit, after, status), write=False)

    async def conversation(self, conversation_id: str) -> dict[str, Any] | None:
        return await self.backend.run(lambda tx: reader.get_conversation(tx, conversation_id), write=False)

    async def subagents(self, conversation_id: str) -> list[dict[str, Any]]:
        """The conversations this one delegated to (its children in the inbox's tree)."""
        return await self.backend.run(lambda tx: reader.list_subagents(tx, conversation_id), write=False)

    async def approvals(
        self,
        status: ApprovalFilter = "pending",
        conversation_id: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Page:
        return await self.backend.run(
            lambda tx: reader.list_approvals(tx, status, conversation_id, limit, after), write=False
        )

    async def archived_messages(self, conversation_id: str) -> list[dict[str, Any]]:
        """Messages compactions took out of the model's transcript, oldest first."""
        return await self.backend.run(lambda tx: reader.archived_messages(tx, conversation_id), write=False)

    async def open_conversations(self) -> list[dict[str, Any]]:
        """Every conversation not closed, with its newest event's payload (the failure watch's view)."""
        return await self.backend.run(reader.open_conversations, write=False)

    async def approval(self, request_id: str) -> dict[str, Any] | None:
        return await self.backend.run(lambda tx: reader.get_approval(tx, request_id), write=False)

    async def conversation_view(self, conversation_id: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """One conversation's row and all its approvals, oldest first, read together."""

        async def operation(tx: Tx) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
            row = await reader.get_conversation(tx, conversation_id)
            return row, (await reader.list_approvals(tx, "all", conversation_id)).items

        return await self.backend.run(operation, write=False)

    # Events.
    async def latest_event_id(self) -> int:
        return await self.backend.run(reader.latest_event_id, write=False)

    async def events(
        self, after_event_id: int = 0, conversation_id: str | None = None, limit: int = 500
    ) -> tuple[list[dict[str, Any]], int]:
        """Events after a position, and the newest id (lower than the position after a rebuild)."""

        async def operation(tx: Tx) -> tuple[list[dict[str, Any]], int]:
            found = await reader.events_after(tx, after_event_id, conversation_id, limit)
            return found, await reader.latest_event_id(tx)

        return await self.backend.run(operation, write=False)

    async def event_mark(self) -> int:
        return await self.backend.event_mark()

    async def wait_for_events(self, timeout: float, mark: int | None = None) -> None:
        """Until new events may exist: LISTEN/NOTIFY on PostgreSQL, a short poll on SQLite."""
        await self.backend.wait_for_events(timeout, mark)


__all__ = ["Page", "ProjectionStore"]
