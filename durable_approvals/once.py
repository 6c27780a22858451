"""`run_approved_once`: the caller's approved side effect, at most once per request.

The approval service's execution ledger is asked first (an activity on the service's task queue):
an effect already run returns its recorded result, one that started and never reported back is
"outcome unknown" and is not run again. Otherwise the effect runs as the caller's own activity
with a single attempt, so Temporal never retries it behind the ledger's back; a worker that dies
mid-effect leaves the ledger at "started", and every later run of the caller learns the outcome
is unknown instead of running it twice. The ledger also refuses a request that was not approved.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_approvals.types import (
        APPROVED_EFFECT_BEGIN,
        APPROVED_EFFECT_FINISH,
        DEFAULT_TASK_QUEUE,
        ApprovalResult,
        EffectClaim,
        EffectClaimInput,
        EffectFinishInput,
        EffectOutcome,
    )

_LEDGER_TIMEOUT = timedelta(seconds=30)
_LEDGER_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10))


async def run_approved_once(
    approval: ApprovalResult,
    effect: Any,
    argument: Any,
    *,
    name: str,
    start_to_close_timeout: timedelta,
    task_queue: str = DEFAULT_TASK_QUEUE,
    result_type: type | None = None,
) -> EffectOutcome:
    """Run the activity `effect(argument)` for an approved request, at most once across every run
    of every caller that holds the same request."""
    if not approval.approved:
        return EffectOutcome(state="not_approved", detail=f"{approval.request_id} was {approval.decision}")
    claim = await workflow.execute_activity(
        APPROVED_EFFECT_BEGIN,
        EffectClaimInput(request_id=approval.request_id, name=name),
        task_queue=task_queue,
        result_type=EffectClaim,
        start_to_close_timeout=_LEDGER_TIMEOUT,
        retry_policy=_LEDGER_RETRY,
    )
    if claim.verdict == "finished":
        return EffectOutcome(state="already_ran", result=claim.result)
    if claim.verdict == "unknown":
        return EffectOutcome(state="outcome_unknown", detail=_UNKNOWN)
    try:
        result = await workflow.execute_activity(
            effect,
            argument,
            start_to_close_timeout=start_to_close_timeout,
            retry_policy=RetryPolicy(maximum_attempts=1),
            result_type=result_type,
        )
    except ActivityError as err:
        if isinstance(err.cause, ApplicationError):
            raise  # the effect ran and raised: its own error, known, for the caller to handle
        return EffectOutcome(state="outcome_unknown", detail=f"{_UNKNOWN} ({err.cause or err})")
    await workflow.execute_activity(
        APPROVED_EFFECT_FINISH,
        EffectFinishInput(request_id=approval.request_id, result=result),
        task_queue=task_queue,
        start_to_close_timeout=_LEDGER_TIMEOUT,
        retry_policy=_LEDGER_RETRY,
    )
    return EffectOutcome(state="ran", result=result)


_UNKNOWN = "the effect started but its worker stopped before it reported back; it was not run again"
