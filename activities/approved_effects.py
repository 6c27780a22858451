"""The ledger's side of `durable_approvals.run_approved_once`: a caller's approved side effect is
claimed here, on the service's task queue, before the caller runs it, and its result recorded
after. Only an approved request may be claimed, so an effect never runs on another's approval."""

from __future__ import annotations

import json

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.ledger import Ledger
from core.contract import ERROR_NOT_APPROVED
from core.conversation_model import APPROVED_RESOLUTIONS
from core.tool_run_model import ToolResult
from durable_approvals.types import (
    APPROVED_EFFECT_BEGIN,
    APPROVED_EFFECT_FINISH,
    EffectClaim,
    EffectClaimInput,
    EffectFinishInput,
)
from storage.store import ProjectionStore
from workflows.request_healing import heal_request


def _key(request_id: str) -> str:
    return f"effect:{request_id}"


class ApprovedEffectActivities:
    def __init__(self, ledger: Ledger, store: ProjectionStore) -> None:
        self._ledger, self._store = ledger, store

    @activity.defn(name=APPROVED_EFFECT_BEGIN)
    async def approved_effect_begin(self, claim: EffectClaimInput) -> EffectClaim:
        row = await self._store.approval(claim.request_id)
        if row is not None and row["decision"] is None and await heal_request(activity.client(), self._store, row):
            row = await self._store.approval(claim.request_id)  # decided: its door had not written it yet
        if row is None or row["decision"] not in APPROVED_RESOLUTIONS:
            decided = "no such request" if row is None else f"its decision is {row['decision'] or 'pending'}"
            raise ApplicationError(
                f"{claim.request_id} was not approved ({decided}): its effect may not run",
                type=ERROR_NOT_APPROVED,
                non_retryable=True,
            )
        found = await self._ledger.begin(_key(claim.request_id), claim.name, activity.info().attempt)
        if found.verdict == "finished" and found.result is not None:
            return EffectClaim(verdict="finished", result=json.loads(found.result.content))
        return EffectClaim(verdict=found.verdict)

    @activity.defn(name=APPROVED_EFFECT_FINISH)
    async def approved_effect_finish(self, finished: EffectFinishInput) -> None:
        await self._ledger.finish(_key(finished.request_id), ToolResult(content=json.dumps(finished.result)))
