"""Decision claims: the first person to decide a request wins at once, before the workflow records it.

The CLI and the UI both claim here (one row per request id, inserted once or refused) before they
send the decision to the workflow, so two near-simultaneous decisions never both go out and
neither is silently dropped, whichever processes or hosts they come from. This table is the
deciders' arbiter; the projection tables stay the worker's alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.contract import ERROR_ALREADY_RESOLVED
from core.conversation_model import DecisionInput
from core.refusals import (
    ClaimedDecision,
    DecisionRefused,
    Refusal,
    RequestFacts,
    already_approved,
    approvals_missing,
    decision_refusal,
    unknown,
)
from storage import reader
from storage.backend import Tx
from storage.writes import now_iso

STALE_CLAIM_SECONDS = 10.0


def facts_from_row(row: dict[str, Any]) -> RequestFacts:
    """A read-model approval row (storage/reader.py's shape) as the facts the refusal rule judges."""
    return RequestFacts(
        request_id=row["request_id"],
        conversation_id=row["conversation_id"],
        arguments=row["arguments"],
        approvers=row["approvers"],
        not_by=row["not_by"],
        required=row["required"],
        approved_by=tuple(row["approved_by"]),
        resolution=row["decision"],
        decided_by=row["decided_by"],
        editable=row["editable"],
        supplied_by_approver=tuple(row.get("supplied_by_approver") or ()),
    )


async def claim_decision(tx: Tx, decision: DecisionInput) -> ClaimedDecision:
    """Judge the decision by the read model's row (core/refusals.py, the rule the workflow applies
    too) and claim the request atomically, or refuse."""
    facts = await _judged(tx, decision)
    if await _one_of_several(tx, decision, facts):
        return ClaimedDecision(facts.conversation_id, decision, partial=True)
    return await _claim(tx, decision, facts.conversation_id)


async def claim_in_autocommit(tx: Tx, decision: DecisionInput) -> ClaimedDecision | None:
    """The same claim with each statement committing on its own (PostgreSQL's autocommit): one read,
    then one statement that claims. None: the request needs several approvals, whose bookkeeping
    takes several statements, so the caller claims it in a transaction (`claim_decision`).

    Nothing is lost by leaving the transaction: at READ COMMITTED the read takes no lock either way,
    and the one statement that writes is atomic on its own; the primary key still arbitrates."""
    facts = await _judged(tx, decision)
    if decision.decision != "deny" and facts.required > 1:
        return None
    return await _claim(tx, decision, facts.conversation_id)


async def _judged(tx: Tx, decision: DecisionInput) -> RequestFacts:
    row = await reader.get_decision_terms(tx, decision.request_id)
    facts = None if row is None else facts_from_row(row)
    refused = decision_refusal(facts, decision)
    if facts is None or refused is not None:
        raise DecisionRefused(*(refused or unknown(decision.request_id)), _approval_again(facts, decision, refused))
    return facts


def _approval_again(
    facts: RequestFacts | None, decision: DecisionInput, refused: Refusal | None
) -> ClaimedDecision | None:
    """A person's approval of a request that needs several, refused because the doors recorded it
    already: it may never have reached the workflow (its sender lost the database's answer, or died
    before sending it), so it is carried with the refusal to be sent again (the workflow applies a
    person's approval once), and its own sender's second try knows it for its own."""
    if facts is None or refused is None or facts.required <= 1:
        return None
    missing = approvals_missing(facts.required, len(facts.approved_by))
    if refused != already_approved(decision.principal, decision.request_id, missing):
        return None
    return ClaimedDecision(facts.conversation_id, decision, partial=True)


# The claim and the whole decision (principal, groups, hash, door, for a re-delivery if its sender
# dies) in one statement: the decision is kept only when this insert added the claim.
_CLAIM_WITH_DECISION = """WITH won AS (
    INSERT INTO ui_decision_claims (request_id, conversation_id, decision, reason, decided_by, claimed_at)
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING RETURNING request_id)
INSERT INTO ui_claimed_decisions (request_id, decision_json) SELECT request_id, ? FROM won
ON CONFLICT (request_id) DO UPDATE SET decision_json = excluded.decision_json"""


async def _claim(tx: Tx, decision: DecisionInput, conversation_id: str) -> ClaimedDecision:
    claim = (decision.request_id, conversation_id, decision.decision, decision.reason, decision.decided_by, now_iso())
    if tx.dialect == "postgresql":
        won = await tx.execute(_CLAIM_WITH_DECISION, (*claim, decision.model_dump_json()))
    else:
        # The primary key arbitrates: of any number of concurrent inserts, exactly one adds the row.
        won = await tx.execute(
            "INSERT INTO ui_decision_claims (request_id, conversation_id, decision, reason, decided_by, claimed_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING",
            claim,
        )
        if won:
            await tx.send(
                "INSERT INTO ui_claimed_decisions (request_id, decision_json) VALUES (?, ?)"
                " ON CONFLICT (request_id) DO UPDATE SET decision_json = excluded.decision_json",
                (decision.request_id, decision.model_dump_json()),
            )
    if won:
        return ClaimedDecision(conversation_id, decision)
    earlier = await tx.fetchone(
        "SELECT c.decision, c.reason, c.decided_by, c.claimed_at, d.decision_json FROM ui_decision_claims c"
        " LEFT JOIN ui_claimed_decisions d ON d.request_id = c.request_id WHERE c.request_id = ?",
        (decision.request_id,),
    )
    if earlier is None:  # released by its sender between our insert and this read: a lost race
        raise DecisionRefused(ERROR_ALREADY_RESOLVED, f"{decision.request_id} is being decided; try again")
    first = (
        DecisionInput.model_validate_json(earlier["decision_json"])
        if earlier["decision_json"]
        else DecisionInput(
            request_id=decision.request_id,
            decision=earlier["decision"],
            reason=earlier["reason"],
            decided_by=earlier["decided_by"],
        )
    )
    # The earlier decision is sent again when its sender may have died before delivering it, or when
    # it is this very decision, whose claim went in while the answer was lost with the connection.
    again = _stale(earlier["claimed_at"]) or first == decision
    raise DecisionRefused(
        ERROR_ALREADY_RESOLVED,
        f"{decision.request_id} was already decided: {earlier['decision']} by {earlier['decided_by']}",
        ClaimedDecision(conversation_id, first) if again else None,
    )


async def _one_of_several(tx: Tx, decision: DecisionInput, facts: RequestFacts) -> bool:
    """An approval of a request that needs several people: record this person's approval (once) and
    say whether it still waits for others (then it is sent without claiming the request; the last
    approval, or any deny, claims it as usual)."""
    required = facts.required
    if decision.decision == "deny" or required <= 1:
        return False
    if await tx.fetchone("SELECT 1 AS taken FROM ui_decision_claims WHERE request_id = ?", (decision.request_id,)):
        return False  # decided already: the claim refuses it
    added = await tx.execute(
        "INSERT INTO ui_partial_approvals (request_id, principal, approved_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (decision.request_id, decision.principal, now_iso()),
    )
    count = await tx.fetchone(
        "SELECT COUNT(*) AS approvals FROM ui_partial_approvals WHERE request_id = ?", (decision.request_id,)
    )
    approvals = int(count["approvals"]) if count is not None else 0
    if not added:
        # Recorded here, but not yet in the workflow (the read model's approved_by would have refused
        # it first): a concurrent approval by the same person, or one whose sender lost its answer or
        # could not deliver it. Refused as the rule says, and carried, so it is sent again (the
        # workflow applies a person's approval once) and its own sender knows it for its own.
        missing = approvals_missing(required, approvals)
        mine = ClaimedDecision(facts.conversation_id, decision, partial=True)
        raise DecisionRefused(*already_approved(decision.principal, decision.request_id, missing), mine)
    return approvals_missing(required, approvals) > 0


def _stale(claimed_at: str) -> bool:
    """A claim still unrecorded this long after it was made has likely lost its sender before delivery."""
    age = datetime.now(UTC) - datetime.fromisoformat(claimed_at)
    return age.total_seconds() > STALE_CLAIM_SECONDS


async def release_claim(tx: Tx, request_id: str) -> None:
    """Undo a claim whose decision could not be delivered, so the person can try again."""
    await tx.send("DELETE FROM ui_decision_claims WHERE request_id = ?", (request_id,))
    await tx.send("DELETE FROM ui_claimed_decisions WHERE request_id = ?", (request_id,))


async def release_partial_approval(tx: Tx, request_id: str, principal: str | None) -> None:
    """Undo one person's approval of a request that needs several, which could not be delivered: it
    took no claim, and the request's claim (another person's, perhaps) stays."""
    await tx.send("DELETE FROM ui_partial_approvals WHERE request_id = ? AND principal = ?", (request_id, principal))
