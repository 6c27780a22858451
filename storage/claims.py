"""Decision claims: the first person to decide a request wins at once, before the workflow records it.

The CLI and the UI both claim here (one row per request id, inserted once or refused) before they
signal the workflow, so two near-simultaneous decisions never both go out and neither is silently
dropped, whichever processes or hosts they come from. This table is the deciders' arbiter; the
projection tables stay the worker's alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from core.approvers import approver_refusal, may_decide
from core.models import (
    ERROR_ALREADY_RESOLVED,
    ERROR_INVALID_EDIT,
    ERROR_NOT_AN_APPROVER,
    ERROR_STALE_APPROVAL,
    ERROR_UNKNOWN_APPROVAL,
    DecisionInput,
    arguments_hash,
)
from storage.backend import Tx
from storage.writes import now_iso

STALE_CLAIM_SECONDS = 10.0


class DecisionRefused(Exception):
    """A decision that must not be sent; error_type is the contract's ApplicationError type."""

    def __init__(self, error_type: str, message: str, earlier: ClaimedDecision | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        # An earlier claim the workflow has not recorded yet: its sender may have died before
        # signalling, so whoever is refused sends it again (the workflow applies only the first).
        self.earlier = earlier


@dataclass(frozen=True)
class ClaimedDecision:
    conversation_id: str
    decision: DecisionInput


async def claim_decision(tx: Tx, decision: DecisionInput) -> ClaimedDecision:
    """Check the request against the projection and claim it atomically, or refuse."""
    row = await tx.fetchone(
        "SELECT conversation_id, decision, decided_by, details_json FROM ui_pending_approvals WHERE request_id = ?",
        (decision.request_id,),
    )
    if row is None:
        raise DecisionRefused(ERROR_UNKNOWN_APPROVAL, f"no approval request {decision.request_id}")
    if row["decision"] is not None:
        raise DecisionRefused(
            ERROR_ALREADY_RESOLVED,
            f"{decision.request_id} was already resolved: {row['decision']} by {row['decided_by']}",
        )
    conversation_id = str(row["conversation_id"])
    details = json.loads(row["details_json"])
    stale = _stale_hash(decision, details.get("arguments", {}))
    if stale is not None:
        raise DecisionRefused(ERROR_STALE_APPROVAL, stale)
    approvers, not_by = details.get("approvers"), details.get("not_by")
    if not may_decide(approvers, decision.principal, decision.groups, not_by):
        why = approver_refusal(decision.request_id, approvers, decision.principal, decision.groups, not_by)
        raise DecisionRefused(ERROR_NOT_AN_APPROVER, why)
    edit = _edit_refusal(decision, details)
    if edit is not None:
        raise DecisionRefused(ERROR_INVALID_EDIT, edit)
    if await _one_of_several(tx, decision, details.get("required", 1)):
        return ClaimedDecision(conversation_id, decision)
    # The primary key arbitrates: of any number of concurrent inserts, exactly one adds the row.
    won = await tx.execute(
        "INSERT INTO ui_decision_claims (request_id, conversation_id, decision, reason, decided_by, claimed_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING",
        (decision.request_id, conversation_id, decision.decision, decision.reason, decision.decided_by, now_iso()),
    )
    if won:
        # The whole decision (principal, groups, hash, door), for a re-delivery if its sender dies.
        await tx.execute("DELETE FROM ui_claimed_decisions WHERE request_id = ?", (decision.request_id,))
        await tx.execute(
            "INSERT INTO ui_claimed_decisions (request_id, decision_json) VALUES (?, ?)",
            (decision.request_id, decision.model_dump_json()),
        )
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
    raise DecisionRefused(
        ERROR_ALREADY_RESOLVED,
        f"{decision.request_id} was already decided: {earlier['decision']} by {earlier['decided_by']}",
        ClaimedDecision(conversation_id, first) if _stale(earlier["claimed_at"]) else None,
    )


async def _one_of_several(tx: Tx, decision: DecisionInput, required: int) -> bool:
    """An approval of a request that needs several people: record this person's approval (once) and
    say whether it still waits for others (then it is sent without claiming the request; the last
    approval, or any deny, claims it as usual)."""
    if decision.decision == "deny" or required <= 1:
        return False
    if await tx.fetchone("SELECT 1 AS taken FROM ui_decision_claims WHERE request_id = ?", (decision.request_id,)):
        return False  # decided already: the claim refuses it
    added = await tx.execute(
        "INSERT INTO ui_partial_approvals (request_id, principal, approved_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (decision.request_id, decision.principal, now_iso()),
    )
    if not added:
        raise DecisionRefused(ERROR_ALREADY_RESOLVED, f"{decision.principal} already approved {decision.request_id}")
    count = await tx.fetchone(
        "SELECT COUNT(*) AS approvals FROM ui_partial_approvals WHERE request_id = ?", (decision.request_id,)
    )
    return count is not None and int(count["approvals"]) < required


def _edit_refusal(decision: DecisionInput, details: dict) -> str | None:
    """What the projection can tell of an edit at once; the workflow checks the rest."""
    rid = decision.request_id
    if decision.decision != "edit":
        return None if decision.arguments is None else f"arguments go with an edit only, not {decision.decision}"
    if decision.arguments is None:
        return f"an edit of {rid} must carry the new arguments"
    if decision.arguments == details.get("arguments"):
        return f"the edited arguments of {rid} are the call's own: approve it instead"
    required = details.get("required", 1)
    if required > 1:
        return f"{rid} needs {required} approvers; an edit is one person's decision, so approve or deny it as it is"
    return None


def _stale_hash(decision: DecisionInput, arguments: object) -> str | None:
    """Why the decision is stale (it was made on other arguments than the request's), or None."""
    if decision.args_hash is None:
        return None
    current = arguments_hash(arguments)
    if decision.args_hash == current:
        return None
    return f"{decision.request_id} is stale: decided on arguments hash {decision.args_hash}, the call's is {current}"


def _stale(claimed_at: str) -> bool:
    """A claim still unrecorded this long after it was made has likely lost its signal."""
    age = datetime.now(UTC) - datetime.fromisoformat(claimed_at)
    return age.total_seconds() > STALE_CLAIM_SECONDS


async def release_claim(tx: Tx, request_id: str) -> None:
    """Undo a claim whose signal could not be delivered, so the person can try again."""
    await tx.execute("DELETE FROM ui_decision_claims WHERE request_id = ?", (request_id,))
    await tx.execute("DELETE FROM ui_claimed_decisions WHERE request_id = ?", (request_id,))
