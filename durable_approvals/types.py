"""The `ApprovalRequest` workflow's input and result: the JSON any SDK sends and gets back.

A caller in another language starts the workflow by its type name on the service's task queue,
with this input as JSON, and reads this result; the Python types are one spelling of it.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

APPROVAL_REQUEST_WORKFLOW = "ApprovalRequest"
DEFAULT_TASK_QUEUE = "durable-approvals"

RequestOutcome = Literal["allow", "deny", "edit", "expired", "canceled"]


class Requester(BaseModel):
    """What started the request: shown on its card, linked to in the Temporal Web UI."""

    workflow_id: str | None = None
    run_id: str | None = None
    agent: str | None = Field(default=None, description="the agent's or pipeline's name, as people know it")
    namespace: str | None = Field(default=None, description="the requester's namespace; default: the service's")


class ApprovalRequestInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, description="the tool or action's name, as the rules match it")
    arguments: dict[str, Any] = Field(default_factory=dict, description="exactly what will run if approved")
    key: str | None = Field(default=None, description="the caller's name for this request, unique per caller")
    title: str | None = Field(default=None, description="one line for the card; default: the tool's name")
    context: str | None = Field(default=None, description="why the agent wants it, in its own words")
    requester: Requester | None = None
    timeout_seconds: float | None = Field(default=None, gt=0, description="default: the service's APPROVAL_TIMEOUT")
    rules: dict[str, Any] | None = Field(
        default=None, description="rules of the policy file's shape that narrow the service's (never widen)"
    )
    notify: list[str] | None = Field(default=None, description="channel names to notify besides the rules' own")
    editable: bool = Field(
        default=True, description="false where the caller cannot run edited arguments: every door refuses an edit"
    )


class ApprovalResult(BaseModel):
    request_id: str
    decision: RequestOutcome
    arguments: dict[str, Any] = Field(description="what may run: the call's own arguments, or an edit's")
    args_hash: str = Field(description="the hash of `arguments`, as the service computes it")
    decided_by: str | None = None
    door: str | None = Field(default=None, description="ui, cli, slack, signal, or policy (decided by a rule)")
    reason: str | None = None
    decided_at: datetime | None = None

    @property
    def approved(self) -> bool:
        return self.decision in ("allow", "edit")


def derived_request_id(workflow_id: str, key: str) -> str:
    """The request id the Python helper uses: the same caller and key always name the same
    request, so a retried start finds it instead of opening another."""
    digest = hashlib.sha256(f"{workflow_id}\n{key}".encode()).hexdigest()[:20]
    return f"approval-{digest}"


APPROVED_EFFECT_BEGIN = "approved_effect_begin"
APPROVED_EFFECT_FINISH = "approved_effect_finish"
EffectState = Literal["ran", "already_ran", "outcome_unknown", "not_approved"]


class EffectClaimInput(BaseModel):
    request_id: str
    name: str = Field(description="what the effect is, for the ledger and the audit")


class EffectClaim(BaseModel):
    verdict: Literal["run", "finished", "unknown"]
    result: Any = Field(default=None, description="the recorded result of a finished effect")


class EffectFinishInput(BaseModel):
    request_id: str
    result: Any = None


class EffectOutcome(BaseModel):
    """What became of an approved side effect run through `run_approved_once`."""

    state: EffectState
    result: Any = Field(default=None, description="the effect's result (ran now, or recorded when it ran before)")
    detail: str | None = Field(default=None, description="why the outcome is unknown, or why it did not run")


APPROVAL_REQUEST_RESULT = "approval_request_result"
