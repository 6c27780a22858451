"""Making and revoking grants from a door (CLI or UI), and what a new grant does at once.

A grant is checked (the pattern's syntax, the maker under the approver rules), stored, and then
judges again what already waits: every unresolved request in its scope whose call it covers is
approved through the normal decision path (the same claim and update as `approve`), by the grant's
maker, through the door `grant`, with the reason `grant <id>: <pattern>`. Calls asked later are
the workflow's to judge (activities/judge.py). Revoking ends a grant at once; revoking an
`approve --always` grant also tells its conversation to forget that always-allow.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from config.settings import Settings
from core.contract import SIGNAL_FORGET_ALWAYS_ALLOW
from core.conversation_model import DecisionInput
from core.grants import ForgetAlwaysAllow, Grant, GrantScope
from core.refusals import DecisionRefused
from doors.control import send_decision
from doors.grant_checks import BadGrant, GrantRefused, refusal, row_covered, valid_pattern
from storage.store import ProjectionStore

log = logging.getLogger(__name__)

DOOR_ALWAYS = "always"  # the door of the grant an `approve --always` records
MAX_GRANT_SECONDS = 30 * 86400.0  # a lifetime longer than this is "until revoked", said as such

ClientFactory = Callable[[], Awaitable[Client]]

__all__ = ["BadGrant", "GrantRefused", "MadeGrant", "UnknownGrant", "make_grant", "new_grant", "revoke"]


class UnknownGrant(LookupError):
    """No such grant, or no such conversation to scope one to (exit 3, HTTP 404)."""


@dataclass(frozen=True)
class MadeGrant:
    grant: Grant
    approved: list[str] = field(default_factory=list)  # the waiting requests it approved at once

    def document(self) -> dict[str, Any]:
        return {"grant": self.grant.model_dump(mode="json"), "approved": self.approved}


def new_grant_id() -> str:
    return f"gr_{secrets.token_hex(5)}"


async def new_grant(
    settings: Settings,
    store: ProjectionStore,
    *,
    pattern: str,
    scope: GrantScope,
    made_by: str,
    groups: list[str],
    door: str,
    conversation_id: str | None = None,
    for_seconds: float | None = None,
    from_request: str | None = None,
    now: datetime | None = None,
) -> Grant:
    """A grant checked and ready to store (nothing is written): BadGrant for a bad pattern or scope,
    GrantRefused when the approver rules do not admit the maker, UnknownGrant for an unknown
    conversation. A conversation scope is widened to its top conversation (subagents follow it)."""
    pattern = valid_pattern(pattern)
    if scope == "conversation" and not conversation_id:
        raise BadGrant("a grant for one conversation needs its id (or make it everywhere)")
    if for_seconds is not None and not 0 < for_seconds <= MAX_GRANT_SECONDS:
        raise BadGrant(f"a grant's lifetime must be above 0 and at most {MAX_GRANT_SECONDS / 86400:g} days")
    why = refusal(settings.load_policy(), pattern, made_by, groups)
    if why is not None:
        raise GrantRefused(why)
    top = None
    if scope == "conversation" and conversation_id is not None:
        if await store.conversation(conversation_id) is None:
            raise UnknownGrant(f"no conversation {conversation_id}")
        top = await store.top_conversation(conversation_id)
    created = now or datetime.now(UTC)
    return Grant(
        grant_id=new_grant_id(),
        pattern=pattern,
        scope=scope,
        conversation_id=top,
        made_by=made_by,
        door=door,
        created_at=created,
        expires_at=None if for_seconds is None else created + timedelta(seconds=for_seconds),
        from_request=from_request,
    )


async def make_grant(
    client: ClientFactory, settings: Settings, store: ProjectionStore, grant: Grant, groups: list[str]
) -> MadeGrant:
    """Store the grant, then approve what waits that it covers (see the module's docstring)."""
    await store.add_grant(grant)
    return MadeGrant(grant, await approve_covered(client, settings, store, grant, groups))


async def approve_covered(
    client: ClientFactory, settings: Settings, store: ProjectionStore, grant: Grant, groups: list[str]
) -> list[str]:
    """Approve every unresolved, unclaimed request the grant covers and reaches; a request the
    decision path refuses (decided meanwhile, its maker not an approver of it, its conversation
    ended) stays as it is. Temporal is reached only when something is covered."""
    approved: list[str] = []
    for row in (await store.approvals("pending")).items:
        if row["claimed_decision"] is not None or row["required"] > 1 or not grant.active(datetime.now(UTC)):
            continue
        if row.get("supplied_by_approver"):  # it waits for a person's values: no grant stands for them
            continue
        if not row_covered(grant.pattern, row) or not await _reaches(store, grant, row["conversation_id"]):
            continue
        decision = DecisionInput(
            request_id=row["request_id"],
            decision="allow",
            reason=f"grant {grant.grant_id}: {grant.pattern}",
            decided_by=grant.made_by,
            args_hash=row["args_hash"],
            door="grant",
            principal=grant.made_by,
            groups=groups,
        )
        try:
            await send_decision(await client(), settings, decision, store)
        except (DecisionRefused, RPCError) as err:
            log.info("grant %s left %s waiting: %s", grant.grant_id, row["request_id"], err)
            continue
        approved.append(row["request_id"])
    return approved


async def _reaches(store: ProjectionStore, grant: Grant, conversation_id: str) -> bool:
    """Everywhere, or the request's conversation or its top one is the grant's (as the workflow judges)."""
    if grant.scope == "everywhere":
        return True
    return grant.conversation_id in (conversation_id, await store.top_conversation(conversation_id))


async def revoke(
    client: ClientFactory, store: ProjectionStore, grant_id: str, by: str, now: datetime | None = None
) -> Grant:
    """End the grant now (one revoked already stays as it was); UnknownGrant when there is none.
    An `approve --always` grant's conversation is told to forget the always-allow, every time, so
    a revoke whose signal failed can be repeated. An ended conversation has nothing to forget."""
    grant = await store.revoke_grant(grant_id, by, now or datetime.now(UTC))
    if grant is None:
        raise UnknownGrant(f"no grant {grant_id}")
    if grant.door == DOOR_ALWAYS and grant.conversation_id is not None:
        handle = (await client()).get_workflow_handle(grant.conversation_id)
        try:
            await handle.signal(SIGNAL_FORGET_ALWAYS_ALLOW, ForgetAlwaysAllow(tool_name=grant.pattern))
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
    return grant


async def record_always(store: ProjectionStore, row: dict[str, Any], made_by: str) -> Grant:
    """The grant an always-allow stands for (its conversation, the tool's name, no expiry), so it
    can be listed and revoked; the conversation's active one when it exists already."""
    wanted = (DOOR_ALWAYS, row["conversation_id"], row["tool_name"])
    for grant in await store.grants_in_scope([row["conversation_id"]]):
        if (grant.door, grant.conversation_id, grant.pattern) == wanted and grant.active(datetime.now(UTC)):
            return grant
    grant = Grant(
        grant_id=new_grant_id(),
        pattern=row["tool_name"],
        scope="conversation",
        conversation_id=row["conversation_id"],
        made_by=made_by,
        door=DOOR_ALWAYS,
        created_at=datetime.now(UTC),
        from_request=row["request_id"],
    )
    await store.add_grant(grant)
    return grant
