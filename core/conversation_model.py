"""The conversation workflow's input and state, its approval records, its signals' and updates' payloads."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints

from core.chat_model import ChatMessage, ContextAnchor
from core.policy_rules import DelegationLimits, NotifyPlan, PolicyRules
from core.prescreen_verdict import PrescreenVerdict
from core.previews import EffectPreview
from core.tool_model import PermissionType, ToolSource
from core.why import WhyContext
from core.wire_model import WireModel

TurnStatus = Literal["idle", "running", "awaiting_approval", "failed", "closed"]
# `edit`: approve with arguments a person changed (the decision sends them).
Decision = Literal["allow", "deny", "always_allow", "edit"]
# `stale`: approved, but its target changed before it ran; it did not run and was asked again.
Resolution = Literal["allow", "deny", "always_allow", "edit", "expired", "canceled", "stale"]
APPROVED_RESOLUTIONS: tuple[Resolution, ...] = ("allow", "always_allow", "edit")  # those that run the call
# Through which door a decision came: the UI, the CLI, or a raw signal/update (the default).
# `grant`: a person's standing grant decided it (core/grants.py); `policy`: a change of the rules
# re-judged it; `prescreen`: the pre-screen model did; `link`: a one-time decision link's page
# (doors/decision_links.py). A channel that is also a door adds its own
# (`slack`: channels/, its registry), so a door is a name, not a closed list: a new channel needs no
# edit here, and every door recorded before still reads.
BUILT_IN_DOORS = ("ui", "cli", "signal", "grant", "policy", "prescreen", "link")
Door = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
# How a conversation ended: a door names who closed it; "subagent" says a subagent finished its task.
EndDoor = Door
# Why a notification goes out; with the request id and the channel it names the notification once.
NotificationKind = Literal["request", "reminder", "escalation", "expiry_warning"]


def request_id_for(conversation_id: str, tool_call_id: str) -> str:
    """The approval key: one request of one conversation, never reused (unambiguous because a
    conversation id holds no `_`, see core/ids.py)."""
    return f"perm_{conversation_id}_{tool_call_id}"


def arguments_hash(arguments: Any) -> str:
    """What a decision binds to: the hash of the canonical JSON of the arguments a person was shown."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class ApprovalExtension(WireModel):
    """One extension of a request's deadline: who, when, by how much, and the new expiry."""

    by: str
    at: datetime
    seconds: float
    expires_at: datetime
    reason: str | None = None


class SubagentInfo(WireModel):
    """Set when the conversation is a subagent: one task, then it ends with its answer."""

    parent_id: str
    parent_tool_call_id: str
    depth: int = Field(ge=1)
    task: str
    tools: list[str] = Field(description="the tools it is offered (a subset of its parent's)")


class ApprovalRecord(WireModel):
    """One approval request as the workflow holds it; the projection mirrors it."""

    request_id: str
    conversation_id: str
    turn_id: str
    tool_call_id: str
    tool_name: str
    permission_type: PermissionType
    arguments: dict[str, Any]
    created_at: datetime
    tool_source: ToolSource = "builtin"
    tool_origin: str = "builtin"
    tool_hash: str | None = Field(default=None, description="definition hash of the tool the person was shown")
    tool_changed: bool = Field(default=False, description="always allowed before, but its definition changed")
    annotations: dict[str, Any] = Field(default_factory=dict)
    expires_at: datetime
    resolution: Resolution | None = None
    reason: str | None = None
    decided_by: str | None = None
    resolved_at: datetime | None = None
    decided_args_hash: str | None = Field(default=None, description="the arguments hash the decision sent")
    decided_via: Door | None = Field(default=None, description="the door the decision came through")
    approvers: list[str] | None = Field(default=None, description="who may decide it; None: anyone")
    required: int = Field(default=1, description="distinct approvals it needs before it runs")
    approved_by: list[str] = Field(default_factory=list, description="who approved so far (while partial)")
    not_by: str | None = Field(default=None, description="who may not decide it: the starter, when a rule says so")
    edited_arguments: dict[str, Any] | None = Field(
        default=None, description="what an edit decision changed the arguments to (they ran); None: not edited"
    )
    decided_groups: list[str] = Field(default_factory=list, description="the groups the deciders' doors verified")
    notify: NotifyPlan | None = Field(default=None, description="notifications and their timers; None: none")
    extensions: list[ApprovalExtension] = Field(default_factory=list, description="deadline extensions, in order")
    editable: bool = Field(default=True, description="false where the caller cannot run edited arguments")
    preview: EffectPreview | None = Field(default=None, description="what the call will change, as asked")
    why: WhyContext | None = Field(default=None, description="why the agent wants it: the turn's request, its reason")
    prescreen: PrescreenVerdict | None = Field(default=None, description="what the pre-screen said, before a person")
    reasked_as: str | None = Field(default=None, description="stale: the request the same call was asked again as")
    supplied_by_approver: list[str] = Field(
        default_factory=list, description="arguments the approver supplies (core/supplied_arguments.py)"
    )
    supplied_by: dict[str, str] = Field(default_factory=dict, description="who supplied each of them (never the value)")
    # The values as the deciding door sealed them, for the tool's activity alone: kept in the
    # workflow's memory (its history holds the decision), never in a projection or a query's answer.
    sealed_supplied: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)


class ConversationInput(WireModel):
    """Workflow input; also the state carried across continue-as-new."""

    conversation_id: str
    started_by: str | None = Field(default=None, description="the principal who started it, as its door knew")
    policy: PolicyRules = Field(default_factory=PolicyRules)
    approval_timeout_seconds: float = 604800.0
    inbox: list[str] = Field(default_factory=list)
    messages: list[ChatMessage] = Field(default_factory=list)
    always_allow: list[str] = Field(default_factory=list)
    always_allow_hashes: dict[str, str] = Field(
        default_factory=dict, description="tool -> definition hash an always-allow was given for"
    )
    auto_approve: bool = False
    auto_approve_by: str | None = Field(default=None, description="who last switched auto-approve")
    auto_approve_door: Door | None = None
    kv: dict[str, Any] = Field(default_factory=dict)
    turn_count: int = 0
    used_tool_call_ids: list[str] = Field(default_factory=list)
    resolved: dict[str, Resolution] = Field(default_factory=dict)
    continue_as_new_after_events: int | None = None
    # The host queue, under its wire name (recorded inputs hold it; it is carried over continue-as-new).
    tool_queue: str | None = Field(
        default=None, description="the host queue the conversation's tools run on, once chosen (recorded in history)"
    )
    host_gone_seconds: float = Field(
        default=120.0, description="a tool waiting this long for a host no worker polls moves (HOST_GONE_SECONDS)"
    )
    left_hosts: list[str] = Field(default_factory=list, description="host queues that said they left (host_left)")
    restore_from: str | None = Field(default=None, description="moved off this host: the next tool restores the files")
    prescreen_denials: int = Field(default=0, description="calls the pre-screen denied (its breaker counts them)")
    shadow_policy: PolicyRules | None = Field(
        default=None, description="[shadow] rules: judged beside the live ones, differences recorded, never acted on"
    )
    context_budget_tokens: int | None = Field(
        default=None, description="past this the transcript is compacted; None: the built-in default"
    )
    context_anchor: ContextAnchor | None = None
    archived_messages: int = Field(default=0, description="messages moved to the projection's archive so far")
    delegation: DelegationLimits = Field(default_factory=DelegationLimits)
    subagent: SubagentInfo | None = None
    children_started: int = Field(default=0, description="subagents this conversation has started")
    notifications: list[NotificationInput] = Field(
        default_factory=list, description="notifications the last run started and had not delivered"
    )
    workspace: str | None = Field(
        default=None, description="the workspace key its tools use (workflows/workspace_choice.py); None: not chosen"
    )
    shared_workspace: bool = Field(default=False, description="chosen: the shared directory (an older conversation)")


class _StrictInput(WireModel):
    """Signal and update payloads come from outside: no coercion ("yes" is not a boolean)."""

    model_config = ConfigDict(strict=True)


class MessageInput(_StrictInput):
    text: str


class DecisionInput(_StrictInput):
    request_id: str
    decision: Decision
    reason: str | None = None
    decided_by: str | None = None
    args_hash: str | None = Field(
        default=None, description="arguments_hash() of what the decider saw; a mismatch is refused as stale"
    )
    door: Door | None = Field(default=None, description="ui or cli; None: a raw signal or update")
    principal: str | None = Field(default=None, description="the person the door verified")
    groups: list[str] = Field(default_factory=list, description="the principal's groups, as the door knows them")
    arguments: dict[str, Any] | None = Field(
        default=None, description="an edit's new arguments (only with decision edit); args_hash stays the shown ones'"
    )
    supplied: dict[str, str] = Field(
        default_factory=dict,
        description="with an approval: each supplied_by_approver argument's value, sealed by the door"
        " for this request (config/supplied_secret.py); never the value itself",
    )
    writes_resolution: bool = Field(
        default=False,
        description="set by a door that sends the `decide` update and writes the read model: an"
        " ApprovalRequest then hands its resolution back in DecisionResult.resolved instead of writing it",
    )


MAX_EXTENSION_SECONDS = 30 * 24 * 3600.0


class ExtensionInput(_StrictInput):
    """Moves a pending request's deadline later; only someone who may decide it may extend it."""

    request_id: str
    seconds: float = Field(gt=0, le=MAX_EXTENSION_SECONDS)
    reason: str | None = None
    decided_by: str | None = None
    door: Door | None = None
    principal: str | None = None
    groups: list[str] = Field(default_factory=list)


class ExtensionResult(WireModel):
    request_id: str
    expires_at: datetime


class MoveInput(_StrictInput):
    """Re-pin a conversation's tools to another host queue (its own host is gone)."""

    # The host queue, under its wire name: callers send `to` (CONTRACT's `move`).
    to: str = Field(min_length=1, description="the host queue the tools run on from now on")
    by: str | None = None
    door: Door | None = None


class MoveResult(WireModel):
    moved_from: str | None = Field(description="the host queue the tools ran on before; None: none chosen yet")
    to: str = Field(description="the host queue they run on now (MoveInput's `to`)")


class NotificationInput(WireModel):
    """One notification of one request to one channel; `key` names it for the receiver's dedup."""

    key: str = Field(description="request id, channel and kind: the same on every retry")
    channel: str
    kind: NotificationKind
    number: int = Field(default=1, description="which reminder (or warning after an extension) this is")
    request_id: str
    conversation_id: str
    tool_name: str
    arguments: dict[str, Any]
    approvers: list[str] | None = None
    expires_at: datetime
    created_at: datetime
    preview: EffectPreview | None = Field(default=None, description="what the call will change (the webhook's whole)")
    why: WhyContext | None = Field(default=None, description="why the agent wants it")


class AutoApproveInput(_StrictInput):
    enabled: bool
    by: str | None = Field(default=None, description="who switched it, as the door knew them")
    door: Door | None = None


class CloseInput(WireModel):
    by: str | None = Field(default=None, description="who closed it, as the door knew them")
    door: Door | None = None


class DecisionResult(WireModel):
    request_id: str
    resolution: Resolution | None = Field(description="None: a partial approval, more approvers are needed")
    approved_by: list[str] = Field(default_factory=list)
    resolved: dict[str, Any] | None = Field(
        default=None,
        description="an ApprovalRequest's resolution (an ApprovalResolvedProjection, as JSON) for the door"
        " that asked for it (DecisionInput.writes_resolution) to write; None: the workflow writes its own",
    )


class ConversationState(WireModel):
    conversation_id: str
    turn_status: TurnStatus
    turn_id: str | None
    messages: list[ChatMessage]
    pending_approvals: list[ApprovalRecord]
    always_allow: list[str]
    auto_approve: bool
    kv: dict[str, Any] = Field(default_factory=dict)
    last_error: str | None = None
    resolutions: dict[str, Resolution] = Field(
        default_factory=dict, description="how every decided request ended; lets the projection be rebuilt"
    )
    archived_messages: int = Field(
        default=0, description="earlier messages compacted away from `messages`, kept in the projection's archive"
    )
    closed_by: str | None = None
    closed_door: EndDoor | None = None
    auto_approve_by: str | None = None
    auto_approve_door: Door | None = None
