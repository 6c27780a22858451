"""Payload types shared by the workflow, the activities, the CLI and the UI (their names: core/contract.py).

Everything that crosses a Temporal boundary (workflow input, signal, update, query, activity
argument or result) is one of these pydantic models, so every side agrees on one shape.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints

# Re-exported while activities/still_running.py imports it from here; its home is core/contract.py.
from core.contract import SIGNAL_TOOL_STILL_RUNNING as SIGNAL_TOOL_STILL_RUNNING
from core.hosts import WorkspaceRestored, WorkspaceSaved
from core.prescreen_verdict import PrescreenVerdict
from core.previews import EffectPreview
from core.why import WhyContext
from core.wire_model import WireModel

TurnStatus = Literal["idle", "running", "awaiting_approval", "failed", "closed"]
# `edit`: approve with arguments a person changed (the decision carries them).
Decision = Literal["allow", "deny", "always_allow", "edit"]
# `stale`: approved, but its target changed before it ran; it did not run and was asked again.
Resolution = Literal["allow", "deny", "always_allow", "edit", "expired", "canceled", "stale"]
APPROVED_RESOLUTIONS: tuple[Resolution, ...] = ("allow", "always_allow", "edit")  # those that run the call
PermissionType = Literal["read", "write", "execute", "network", "state"]
ToolSource = Literal["builtin", "python", "mcp", "subagent", "external"]
RuleVerdict = Literal["allow", "ask", "deny"]
# Through which door a decision came: the UI, the CLI, or a raw signal/update (the default).
# `grant`: a person's standing grant decided it (core/grants.py); `policy`: a change of the rules
# re-judged it; `prescreen`: the pre-screen model did. A channel that is also a door adds its own
# (`slack`: channels/, its registry), so a door is a name, not a closed list: a new channel needs no
# edit here, and every door recorded before still reads.
BUILT_IN_DOORS = ("ui", "cli", "signal", "grant", "policy", "prescreen")
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


class ToolDef(WireModel):
    """One tool, defined once: what the model sees, what the rules match, and who runs it."""

    name: str = Field(description="the name the model and the rules use (mcp__SERVER__TOOL for MCP tools)")
    description: str
    parameters: dict[str, Any] = Field(description="JSON schema of the arguments (an object schema)")
    permission_type: PermissionType
    rule_argument: str | None = Field(
        default=None, description="the argument rules glob over; None: the canonical JSON of all arguments"
    )
    splitter: Literal["none", "shell"] = Field(
        default="none", description="how the rule argument splits into parts every allow must cover"
    )
    path_arguments: list[str] = Field(default_factory=list, description="arguments confined to the workspace")
    source: ToolSource = "builtin"
    origin: str = Field(default="builtin", description="the Python module or MCP server that provides it")
    remote_name: str | None = Field(default=None, description="the name its module or server knows it by")
    annotations: dict[str, Any] = Field(default_factory=dict, description="hints a server gave (readOnlyHint, ...)")
    at_most_once: bool = Field(default=False, description="guarded by the execution ledger: never run twice")

    def definition_hash(self) -> str:
        """What a person's always-allow binds to: a changed description or schema is a new tool."""
        canonical = json.dumps([self.name, self.description, self.parameters], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolCatalog(WireModel):
    """The tools one turn offers, as an activity listed them; recorded in history for replay."""

    tools: list[ToolDef]
    unavailable: dict[str, str] = Field(default_factory=dict, description="source that failed to list -> why")


class ToolCall(WireModel):
    id: str
    name: str
    arguments: str = Field(description="the raw JSON text the model wrote, kept verbatim")


class ChatMessage(WireModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class TokenUsage(WireModel):
    """What the API counted for one call; absent when the server does not say."""

    prompt_tokens: int
    completion_tokens: int = 0


class LlmReply(ChatMessage):
    """call_llm's result: the assistant message plus the API's usage. The workflow stores only the
    ChatMessage part; a result recorded before usage existed decodes with usage None."""

    usage: TokenUsage | None = None

    def message(self) -> ChatMessage:
        return ChatMessage.model_validate(self.model_dump(exclude={"usage"}))


class ContextAnchor(WireModel):
    """The model's own count of the transcript's first `messages` messages, from the last usage."""

    messages: int
    tokens: int


class ApproverRule(WireModel):
    """Who may decide the calls a rule matches: names and `group:NAME` entries."""

    match: list[str] = Field(description="rules in the allow/ask/deny syntax: tool or tool(glob)")
    approvers: list[str]
    required: int = Field(default=1, ge=1, le=10, description="distinct approvers an allow needs")
    self_approval: bool = Field(default=True, description="false: whoever started the conversation may not decide")
    notify: list[str] = Field(default_factory=list, description="channels told when a matching request opens")
    remind_after: float | None = Field(default=None, gt=0, description="seconds until the first reminder")
    reminders: int = Field(default=1, ge=0, le=50, description="at most this many reminders, remind_after apart")
    escalate_after: float | None = Field(default=None, gt=0, description="seconds until the escalation")
    escalate_to: list[str] = Field(default_factory=list, description="channels and group:NAME entries escalated to")
    warn_before_expiry: float | None = Field(default=None, gt=0, description="seconds before expiry to warn")


class ChannelRoute(WireModel):
    """What the workflow knows of a channel: its kind and the groups it serves (never its URL or secret)."""

    # A plain name, so recorded histories read whatever kinds there were; the worker checks it
    # against the registry when it reads the channels (config/notify_section.py).
    kind: str = "webhook"
    groups: list[str] = Field(default_factory=list, description="requests these groups may decide; '*': every one")


class NotifyPlan(WireModel):
    """Who hears about one request and when, fixed when it opens (from the matching approver rules)."""

    channels: list[str] = Field(default_factory=list)
    remind_after: float | None = None
    reminders: int = 0
    escalate_after: float | None = None
    escalate_channels: list[str] = Field(default_factory=list)
    escalate_groups: list[str] = Field(default_factory=list)
    warn_before_expiry: float | None = None

    def is_empty(self) -> bool:
        timers = (self.remind_after, self.escalate_after, self.warn_before_expiry)
        return not self.channels and not self.escalate_channels and all(t is None for t in timers)


class ApprovalExtension(WireModel):
    """One extension of a request's deadline: who, when, by how much, and the new expiry."""

    by: str
    at: datetime
    seconds: float
    expires_at: datetime
    reason: str | None = None


class PolicyRules(WireModel):
    mode: Literal["default", "auto_approve"] = "default"
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    network: list[str] = Field(
        default_factory=list, description="rules whose calls run with the host's network; others run without"
    )
    approvers: list[ApproverRule] = Field(default_factory=list)
    within: list[PolicyRules] = Field(
        default_factory=list, description="outer rule sets (a subagent's parents): a call gets the strictest verdict"
    )
    channels: dict[str, ChannelRoute] = Field(default_factory=dict, description="notification channels by name")
    cedar_policies: str | None = Field(
        default=None, description="[cedar] policies' text: forbid denies, permit allows (core/cedar_rules.py)"
    )


class DelegationLimits(WireModel):
    """How far a conversation may delegate, and the rules a subagent adds to its parent's."""

    max_depth: int = Field(default=2, ge=0, description="subagents below a top conversation; 0: no delegate tool")
    max_children: int = Field(default=4, ge=0, description="subagents one conversation may start in all")
    rules: PolicyRules | None = Field(default=None, description="a subagent's own rules; None: the parent's alone")


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
    decided_args_hash: str | None = Field(default=None, description="the arguments hash the decision carried")
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
    # The host task queue the conversation's tools run on, once chosen (recorded in history).
    tool_queue: str | None = None
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
    """Re-pin a conversation's tools to another host's task queue (its own host is gone)."""

    to: str = Field(min_length=1, description="the task queue of the host the tools run on from now on")
    by: str | None = None
    door: Door | None = None


class MoveResult(WireModel):
    moved_from: str | None
    to: str


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


LlmPurpose = Literal["reply", "summarise"]


class LlmRequest(WireModel):
    conversation_id: str
    turn_id: str
    messages: list[ChatMessage]
    tools: list[dict[str, Any]]
    purpose: LlmPurpose = Field(default="reply", description="summarise: a compaction's summary request")


class ToolRequest(WireModel):
    conversation_id: str
    turn_id: str
    tool_call_id: str
    request_id: str
    tool_name: str
    arguments: dict[str, Any]
    kv: dict[str, Any] = Field(default_factory=dict)
    network: bool = Field(default=False, description="the sandbox shares the host's network (a network rule matched)")
    tool: ToolDef | None = Field(default=None, description="the definition offered this turn; None: a built-in")
    run_on: str | None = Field(
        default=None, description="the host task queue whose worker may run it; another host answers wrong_host"
    )
    resolved: ApprovalResolvedProjection | None = Field(
        default=None, description="the approval's resolution, written to the read model right before the tool runs"
    )
    workspace: str | None = Field(
        default=None, description="whose workspace the tool runs in (activities/workspaces.py); None: the shared one"
    )
    target_hash: str | None = Field(
        default=None, description="the target's hash the decision saw; another one makes the call stale, unrun"
    )
    status_catch_up_seconds: float | None = Field(
        default=None,
        description="the workflow holds the turn's status for this tool's result: a tool still running"
        f" this many seconds after it started signals {SIGNAL_TOOL_STILL_RUNNING} (workflows/approved_calls.py)",
    )
    restore_from: str | None = Field(
        default=None, description="the conversation moved from this host: restore its workspace's last save first"
    )


class ToolStillRunning(WireModel):
    """The payload of SIGNAL_TOOL_STILL_RUNNING: which approved call's tool is still running."""

    request_id: str


class PreviewInput(WireModel):
    """What the preview activity needs: the call as asked, where it would run, the rule that asked."""

    conversation_id: str
    request_id: str
    tool_name: str
    arguments: dict[str, Any]
    workspace: str | None = None
    annotations: dict[str, Any] = Field(default_factory=dict)
    rule: str | None = None
    run_on: str | None = Field(default=None, description="as ToolRequest.run_on: the one host that may read it")
    packed_content: str | None = Field(
        default=None, description="write_file's content, packed (core/previews.py), in place of arguments' content"
    )
    dry_run_tool: ToolDef | None = Field(
        default=None, description="an MCP tool that offers a dry run (core/previews.py): the preview calls it so"
    )


class ListToolsInput(WireModel):
    conversation_id: str
    turn_id: str
    workspace: str | None = Field(default=None, description="as ToolRequest.workspace: whose MCP servers to list")


class ToolResult(WireModel):
    content: str
    is_error: bool = False
    outcome_unknown: bool = False
    kv: dict[str, Any] | None = Field(default=None, description="new kv state when the tool changed it")
    wrong_host: bool = Field(default=False, description="not run: this worker is not on the request's run_on host")
    stale_target: str | None = Field(default=None, description="not run: the target's hash now (it changed)")
    saved: WorkspaceSaved | None = Field(default=None, description="the workspace's save after the tool")
    restored: WorkspaceRestored | None = Field(default=None, description="the workspace restored before the tool")


class ProjectionEvent(WireModel):
    """One ordered event for the UI; event_key makes a retried write a no-op."""

    event_key: str
    event_type: str
    conversation_id: str
    payload: dict[str, Any] = Field(default_factory=dict)


class ConversationProjection(WireModel):
    conversation_id: str
    turn_status: TurnStatus
    pending_count: int
    updated_at: datetime
    version: int = Field(description="increases with every write of one conversation; older writes lose")
    parent_id: str | None = Field(default=None, description="the conversation that delegated to this one")
    events: list[ProjectionEvent] = Field(default_factory=list)


class ArchivedMessage(WireModel):
    seq: int = Field(description="position in the full transcript (1 is the first message after the system prompt)")
    message: ChatMessage


class CompactionProjection(WireModel):
    """Messages leaving the model's transcript, archived for people before the workflow drops them."""

    messages: list[ArchivedMessage]
    conversation: ConversationProjection


class ApprovalRequestedProjection(WireModel):
    approval: ApprovalRecord
    kv_snapshot: dict[str, Any]
    conversation: ConversationProjection


class ApprovalResolvedProjection(WireModel):
    approval: ApprovalRecord
    conversation: ConversationProjection


class ServiceRules(WireModel):
    """The deployment's rules and default deadline, read by the worker for an ApprovalRequest
    (whose caller knows neither): recorded once in the request's history."""

    policy: PolicyRules
    approval_timeout_seconds: float
    earlier: dict[str, Any] | None = Field(
        default=None, description="the result an earlier run of the same request id was decided with"
    )
