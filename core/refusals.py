"""Why a decision must be refused: the one definition every door and the workflow apply.

The workflow judges a decision by its own record of the request, the decision claim and the
CLI's pre-check by the read model's row; both are first turned into the same RequestFacts, so a
door can never accept what the workflow then refuses, and a refused person reads the same words
whichever door they used. What only the workflow can judge (an edit's new arguments against the
tool's schema and the rules, core/edits.py) comes after these checks, never instead of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from core.approvers import approver_refusal, may_decide
from core.contract import (
    ERROR_ALREADY_RESOLVED,
    ERROR_INVALID_DECISION,
    ERROR_INVALID_EDIT,
    ERROR_NOT_AN_APPROVER,
    ERROR_STALE_APPROVAL,
    ERROR_SUPPLY_REFUSED,
    ERROR_UNKNOWN_APPROVAL,
)
from core.conversation_model import DecisionInput, arguments_hash
from core.supplied_arguments import not_repeatable


class Refusal(NamedTuple):
    """error_type is the contract's ApplicationError type; message is what the person reads."""

    error_type: str
    message: str


@dataclass(frozen=True)
class ClaimedDecision:
    """A decision whose request a door has claimed (storage/claims.py), and the conversation it goes to."""

    conversation_id: str
    decision: DecisionInput
    # One approval of a request that needs several people: it holds no claim on the request, only
    # this person's approval (ui_partial_approvals), which is what undoing it takes back.
    partial: bool = False


class DecisionRefused(Exception):
    """A Refusal raised: a decision (or an extension, a move, an undo) that must not be sent, or
    that its workflow refused; error_type is the contract's ApplicationError type."""

    def __init__(self, error_type: str, message: str, earlier: ClaimedDecision | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        # An earlier claim the workflow has not recorded yet: its sender may have died before
        # sending it, so whoever is refused sends it again (the workflow applies only the first).
        self.earlier = earlier

    @classmethod
    def from_update_error(cls, err: BaseException, untyped: str = ERROR_INVALID_DECISION) -> DecisionRefused:
        """A workflow's refusal of an update (temporalio's WorkflowUpdateFailedError): the type and
        message of its ApplicationError cause, or `untyped` with the cause's text when the cause
        names no type. Read by shape (an ApplicationError's `type` is a string; a TimeoutError's is
        an enum), so the core stays free of temporalio."""
        cause = getattr(err, "cause", None)
        error_type = getattr(cause, "type", None)
        if isinstance(error_type, str) and error_type:
            return cls(error_type, str(getattr(cause, "message", cause)))
        return cls(untyped, str(cause or err))


@dataclass(frozen=True)
class RequestFacts:
    """What is known of one request when a decision arrives, from a workflow record or a row."""

    request_id: str
    conversation_id: str
    arguments: dict[str, Any]
    approvers: list[str] | None = None
    not_by: str | None = None
    required: int = 1
    approved_by: tuple[str, ...] = ()
    resolution: str | None = None
    decided_by: str | None = None
    editable: bool = True
    supplied_by_approver: tuple[str, ...] = ()  # arguments an approval must supply (sealed)


def unknown(request_id: str) -> Refusal:
    return Refusal(ERROR_UNKNOWN_APPROVAL, f"no approval request {request_id}")


def already_resolved(request_id: str, resolution: str, decided_by: str | None) -> Refusal:
    by = f" by {decided_by}" if decided_by else ""
    return Refusal(ERROR_ALREADY_RESOLVED, f"{request_id} was already resolved: {resolution}{by}")


def already_approved(principal: str | None, request_id: str, missing: int) -> Refusal:
    return Refusal(
        ERROR_ALREADY_RESOLVED, f"{principal} already approved {request_id}; it needs {missing} more approver(s)"
    )


def approvals_missing(required: int, approved_by: int) -> int:
    """How many more distinct approvals a request needs before it runs (0: none)."""
    return max(required - approved_by, 0)


def decision_refusal(
    facts: RequestFacts | None, decision: DecisionInput, conversation_id: str | None = None
) -> Refusal | None:
    """Why `decision` must not be applied to the request `facts` describes, or None. A decision
    sent for a conversation (conversation_id) must name one of that conversation's requests."""
    rid = decision.request_id
    if facts is None:
        return unknown(rid)
    if conversation_id is not None and facts.conversation_id != conversation_id:
        return Refusal(
            ERROR_UNKNOWN_APPROVAL, f"{rid} belongs to conversation {facts.conversation_id}, not {conversation_id}"
        )
    if facts.resolution is not None:
        return already_resolved(rid, facts.resolution, facts.decided_by)
    if decision.args_hash is not None and decision.args_hash != (current := arguments_hash(facts.arguments)):
        stale = f"{rid} is stale: decided on arguments hash {decision.args_hash}, the call's is {current}"
        return Refusal(ERROR_STALE_APPROVAL, stale)
    refused = who_refusal(facts, decision.principal, decision.groups)
    if refused is not None:
        return refused
    if decision.decision != "deny" and decision.principal in facts.approved_by:
        return already_approved(decision.principal, rid, approvals_missing(facts.required, len(facts.approved_by)))
    return supply_refusal(facts, decision) or edit_refusal(facts, decision)


def supply_refusal(facts: RequestFacts, decision: DecisionInput) -> Refusal | None:
    """A call with supplied_by_approver arguments runs only with every value from the person who
    approves it, one call at a time; a value goes with nothing else. Names only: the values are sealed."""
    rid, needed, given = decision.request_id, list(facts.supplied_by_approver), sorted(decision.supplied)
    if decision.decision == "always_allow" and needed:
        return Refusal(ERROR_SUPPLY_REFUSED, not_repeatable(rid, needed))
    if given and decision.decision == "deny":
        return Refusal(ERROR_SUPPLY_REFUSED, f"{rid}: values are supplied with an approval, not with a deny")
    if given and not needed:
        return Refusal(ERROR_SUPPLY_REFUSED, f"{rid} takes no supplied arguments")
    if decision.decision == "deny":
        return None
    missing = [name for name in needed if name not in decision.supplied]
    if missing:
        how = " ".join(f"--supply {name}=-" for name in missing)
        return Refusal(
            ERROR_SUPPLY_REFUSED,
            f"{rid} needs {', '.join(missing)} supplied by the approver: fill the card's field, or approve with {how}",
        )
    unknown = [name for name in given if name not in needed]
    if unknown:
        return Refusal(ERROR_SUPPLY_REFUSED, f"{rid} takes only {', '.join(needed)}, not {', '.join(unknown)}")
    return None


def who_refusal(facts: RequestFacts, principal: str | None, groups: list[str], verb: str = "decide") -> Refusal | None:
    """The approver rules and the self-approval rule, for a decision or a deadline extension."""
    if may_decide(facts.approvers, principal, groups, facts.not_by):
        return None
    why = approver_refusal(facts.request_id, facts.approvers, principal, groups, facts.not_by)
    return Refusal(ERROR_NOT_AN_APPROVER, why.replace(" decide ", f" {verb} "))


def edit_refusal(facts: RequestFacts, decision: DecisionInput) -> Refusal | None:
    """What the facts alone tell of an edit: arguments go with an edit and only with one, they
    must change something, and an edit is one person's decision."""
    rid = decision.request_id
    if decision.decision != "edit":
        if decision.arguments is None:
            return None
        return Refusal(ERROR_INVALID_EDIT, f"arguments go with an edit only, not with {decision.decision}")
    if not facts.editable:
        return not_editable(rid)
    if decision.arguments is None:
        return no_arguments(rid)
    if decision.arguments == facts.arguments:
        return same_arguments(rid)
    if facts.required > 1:
        return one_person_only(rid, facts.required)
    return None


def not_editable(request_id: str) -> Refusal:
    return Refusal(
        ERROR_INVALID_EDIT, f"{request_id} cannot be edited: its caller runs the call as asked or not at all"
    )


def no_arguments(request_id: str) -> Refusal:
    return Refusal(ERROR_INVALID_EDIT, f"an edit of {request_id} must include the new arguments")


def same_arguments(request_id: str) -> Refusal:
    return Refusal(ERROR_INVALID_EDIT, f"the edited arguments of {request_id} are the call's own: approve it instead")


def one_person_only(request_id: str, required: int, as_edited: bool = False) -> Refusal:
    asked = " as edited" if as_edited else ""
    return Refusal(
        ERROR_INVALID_EDIT,
        f"{request_id} needs {required} approvers{asked}; an edit is one person's decision,"
        " so approve or deny the call as it is",
    )
