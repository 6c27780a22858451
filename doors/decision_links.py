"""One-time decision links as a door: mint one for a person (`starter.py link`), check one a page
shows, and decide once through it (`ui/link_routes.py`), door `link`.

A link (core/decision_links.py) binds one request, the arguments hash it was minted on, one person
and an expiry. Its page shows the request and decides nothing; its form's post records the use by
the token id first (the first use wins, storage/decision_links.py), then sends the decision through
the same path as the UI (`control.send_decision`: the claim, then the workflow), as the link's
person, so the approver rules, M-of-N and "not the starter" apply as for any door. A refused or
undelivered decision gives the use back: what stays recorded is one decision per link.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from config.settings import Settings
from core.contract import (
    ERROR_BAD_LINK,
    ERROR_CONVERSATION_CLOSED,
    ERROR_INVALID_DECISION,
    ERROR_LINK_EXPIRED,
    ERROR_LINK_USED,
    ERROR_UNDELIVERED,
)
from core.conversation_model import Decision, DecisionInput
from core.decision_links import BadLink, LinkClaims, LinkExpired, link_expiry, link_url, sign, verify
from core.refusals import DecisionRefused, already_resolved, decision_refusal, unknown
from doors.control import send_decision
from storage.claims import facts_from_row
from storage.store import ProjectionStore

LINK_DOOR = "link"
LINK_DECISIONS: tuple[Decision, ...] = ("allow", "deny")  # a link approves or denies the call as shown


@dataclass(frozen=True)
class MintedLink:
    url: str
    claims: LinkClaims


async def decision_link(
    settings: Settings, store: ProjectionStore, request_id: str, person: str, now: float | None = None
) -> str:
    """The URL of a one-time link for `person` to decide `request_id`, bound to its arguments as
    the read model holds them and expiring with the request (a week at most). Raises
    DecisionRefused for an unknown or already-decided request, or a person who may not decide it."""
    return (await mint_link(settings, store, request_id, person, now)).url


async def mint_link(
    settings: Settings, store: ProjectionStore, request_id: str, person: str, now: float | None = None
) -> MintedLink:
    """decision_link, with the claims it signed (what `starter.py link --json` prints)."""
    now = time.time() if now is None else now
    row = await _decidable(store, await store.approval(request_id), request_id, person, None)
    deadline = _timestamp(row.get("expires_at"))
    claims = LinkClaims.new(request_id, row["args_hash"], person, link_expiry(now, deadline))
    return MintedLink(link_url(settings.link_base, sign(settings.decision_link_key(), claims)), claims)


def read_link(settings: Settings, token: str, now: float | None = None) -> LinkClaims:
    """The claims of a token this service signed and still in time; DecisionRefused otherwise."""
    try:
        return verify(settings.decision_link_key(), token, time.time() if now is None else now)
    except LinkExpired as err:
        raise DecisionRefused(ERROR_LINK_EXPIRED, str(err)) from None
    except BadLink as err:
        raise DecisionRefused(ERROR_BAD_LINK, str(err)) from None


async def open_link(
    settings: Settings, store: ProjectionStore, token: str, now: float | None = None
) -> tuple[LinkClaims, dict[str, Any]]:
    """What a link's page shows: its claims and its request's row, once every check that holds
    whichever button is pressed has passed. Decides nothing."""
    claims = read_link(settings, token, now)
    row = await store.approval(claims.request_id)
    await _check_unused(store, claims)
    return claims, await _decidable(store, row, claims.request_id, claims.person, claims.args_hash)


async def decide_by_link(
    client: Client,
    settings: Settings,
    store: ProjectionStore,
    token: str,
    decision: str,
    reason: str | None,
    now: float | None = None,
) -> tuple[LinkClaims, dict[str, Any]]:
    """Decide the link's request once, as its person; returns the claims and the row after it.
    Only the token names the request, the person and the arguments hash: nothing posted beside it can."""
    claims = read_link(settings, token, now)
    if decision not in LINK_DECISIONS:
        raise DecisionRefused(ERROR_INVALID_DECISION, f"a link approves or denies (allow or deny), not {decision!r}")
    if await store.approval(claims.request_id) is None:
        raise DecisionRefused(*unknown(claims.request_id))
    sent = DecisionInput(
        request_id=claims.request_id,
        decision="allow" if decision == "allow" else "deny",
        reason=reason or None,
        decided_by=claims.person,
        args_hash=claims.args_hash,
        door=LINK_DOOR,
        principal=claims.person,
        groups=await store.groups_of(claims.person),
    )
    if not await store.record_link_use(claims.token_id, claims.request_id, claims.person, decision):
        await _check_unused(store, claims)
        raise DecisionRefused(ERROR_LINK_USED, "this link is being used right now; open it again to see how")
    try:
        await send_decision(client, settings, sent, store)
    except DecisionRefused:
        await store.release_link_use(claims.token_id)
        raise
    except RPCError as err:
        await store.release_link_use(claims.token_id)
        if err.status == RPCStatusCode.NOT_FOUND:
            raise DecisionRefused(ERROR_CONVERSATION_CLOSED, "the conversation is no longer running") from None
        raise DecisionRefused(ERROR_UNDELIVERED, f"Temporal could not take the decision now: {err.message}") from None
    except BaseException:
        await store.release_link_use(claims.token_id)
        raise
    row = await store.approval(claims.request_id)
    assert row is not None
    return claims, row


async def _check_unused(store: ProjectionStore, claims: LinkClaims) -> None:
    used = await store.link_use(claims.token_id)
    if used is not None:
        when = str(used["used_at"])[:19].replace("T", " ")
        raise DecisionRefused(
            ERROR_LINK_USED, f"this link was used already: {used['decision']} by {used['person']} at {when} UTC"
        )


async def _decidable(
    store: ProjectionStore, row: dict[str, Any] | None, request_id: str, person: str, args_hash: str | None
) -> dict[str, Any]:
    """The row, once the refusals that hold whichever button is pressed (a deny is refused by the
    fewest) have passed: an unknown request, one decided or claimed already, other arguments than
    `args_hash` (None: the row's own), a person the rules refuse."""
    if row is None:
        raise DecisionRefused(*unknown(request_id))
    if row["status"] != "pending":
        decided = row["decision"] or row["claimed_decision"]
        raise DecisionRefused(*already_resolved(request_id, decided, row["decided_by"] or row["claimed_by"]))
    probe = DecisionInput(
        request_id=request_id,
        decision="deny",
        args_hash=args_hash,
        principal=person,
        groups=await store.groups_of(person),
    )
    refused = decision_refusal(facts_from_row(row), probe)
    if refused is not None:
        raise DecisionRefused(*refused)
    return row


def _timestamp(iso: Any) -> float | None:
    if not iso:
        return None
    return (iso if isinstance(iso, datetime) else datetime.fromisoformat(str(iso))).timestamp()
