"""How the workflow calls its activities: names, timeouts, retries and Web UI summaries in one place.

Activities are called by name so the workflow module never imports their implementations (the
sandbox re-imports workflow modules; the openai client and sqlite have no business there).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    # pydantic models are pure data; passing them through avoids re-importing pydantic per run.
    from core.chat_model import LlmReply, LlmRequest
    from core.contract import ERROR_LLM_AUTHENTICATION, ERROR_LLM_BAD_REQUEST, ERROR_NOTIFICATION_REJECTED
    from core.conversation_model import ApprovalRecord, NotificationInput
    from core.grants import JudgeInput, JudgeVerdict
    from core.hosts import HostCheck
    from core.policy_rules import ServiceRules
    from core.previews import EffectPreview
    from core.projection_model import (
        ApprovalRequestedProjection,
        ApprovalResolvedProjection,
        CompactionProjection,
        ConversationProjection,
    )
    from core.tool_model import ToolCatalog
    from core.tool_run_model import ListToolsInput, PreviewInput, ToolRequest, ToolResult
    from core.undo import PrepareUndoInput, UndoPlan

CALL_LLM = "call_llm"
EXECUTE_TOOL = "execute_tool"
LIST_TOOLS = "list_tools"
RUN_PYTHON_TOOL = "run_python_tool"
PICK_TOOL_HOST = "pick_tool_host"
CHECK_HOST = "check_host"
JUDGE_CALL = "judge_call"
CALL_MCP_TOOL = "call_mcp_tool"
PREVIEW_EFFECT = "preview_effect"
PREVIEW_HOST_WAIT = timedelta(seconds=10)
PREPARE_UNDO = "prepare_undo"
# Which activity runs a tool, by the tool's source.
TOOL_ACTIVITIES = {"builtin": EXECUTE_TOOL, "python": RUN_PYTHON_TOOL, "mcp": CALL_MCP_TOOL}
PROJECT_CONVERSATION = "project_conversation"
PROJECT_APPROVAL_REQUESTED = "project_approval_requested"
PROJECT_APPROVAL_RESOLVED = "project_approval_resolved"
PROJECT_COMPACTION = "project_compaction"
PROJECT_APPROVAL_CHANGED = "project_approval_changed"
SERVICE_RULES = "service_rules"
NOTIFY_APPROVAL = "notify_approval"

LLM_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=6,
    non_retryable_error_types=[ERROR_LLM_BAD_REQUEST, ERROR_LLM_AUTHENTICATION],
)
TOOL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=4)
# A projection write takes milliseconds; one lost with a killed worker is retried after this, so the
# read model never lags a finished workflow by long. (Timeouts are not part of replay's command check.)
PROJECTION_TIMEOUT = timedelta(seconds=10)
PROJECTION_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10))
# A preview or an undo plan reads a file: quick, so tried only a few times.
READ_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=3)
# A receiver that is down is tried again and again, backing off to a minute, until the request expires.
NOTIFY_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    non_retryable_error_types=[ERROR_NOTIFICATION_REJECTED],
)


async def call_llm(request: LlmRequest, summary: str | None = None) -> LlmReply:
    return await workflow.execute_activity(
        CALL_LLM,
        request,
        result_type=LlmReply,
        start_to_close_timeout=timedelta(minutes=3),
        # The activity heartbeats while it waits for the model: a dead worker is noticed in seconds.
        heartbeat_timeout=timedelta(seconds=10),
        retry_policy=LLM_RETRY,
        summary=summary or f"{request.turn_id}: ask the model ({len(request.messages)} messages)",
    )


async def list_tools(request: ListToolsInput) -> ToolCatalog:
    # A server that is down or slow is reported inside the result; the activity itself only fails
    # when the worker does, so a short timeout and a few retries are enough.
    return await workflow.execute_activity(
        LIST_TOOLS,
        request,
        result_type=ToolCatalog,
        start_to_close_timeout=timedelta(seconds=60),
        retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5),
        summary=f"{request.turn_id}: list the tools",
    )


async def preview_effect(request: PreviewInput, host_queue: str | None) -> EffectPreview:
    """What an asked call will change, read on the host queue its tool would run on (None: any worker)."""
    return await workflow.execute_activity(
        PREVIEW_EFFECT,
        request,
        task_queue=host_queue,
        result_type=EffectPreview,
        # A host that is gone must not keep the card from being shown: past this the request is
        # asked with a note instead of a preview (and the conversation can be moved).
        schedule_to_start_timeout=PREVIEW_HOST_WAIT if host_queue is not None else None,
        start_to_close_timeout=timedelta(seconds=60),
        heartbeat_timeout=timedelta(seconds=10),
        retry_policy=READ_RETRY,
        summary=f"preview {request.request_id}: {request.tool_name}",
    )


async def preview_effect_locally(request: PreviewInput) -> EffectPreview:
    """The same preview as a local activity of the worker that holds the workflow: read within the
    workflow task that asks the call, so the card waits for no task's round trip through the server."""
    return await workflow.execute_local_activity(
        PREVIEW_EFFECT,
        request,
        result_type=EffectPreview,
        start_to_close_timeout=timedelta(seconds=60),
        retry_policy=READ_RETRY,
        summary=f"preview {request.request_id}: {request.tool_name}",
    )


async def prepare_undo(request: PrepareUndoInput, host_queue: str | None) -> UndoPlan:
    """What an undo would restore, or why not: read on the conversation's host queue, like its tools."""
    return await workflow.execute_activity(
        PREPARE_UNDO,
        request,
        task_queue=host_queue,
        result_type=UndoPlan,
        start_to_close_timeout=timedelta(seconds=60),
        heartbeat_timeout=timedelta(seconds=10),
        retry_policy=READ_RETRY,
        summary=f"prepare the undo of {request.request_id}",
    )


async def pick_tool_host() -> str:
    """The host queue of whichever worker takes this: the conversation's tools run there from now on."""
    return await workflow.execute_activity(
        PICK_TOOL_HOST,
        result_type=str,
        start_to_close_timeout=PROJECTION_TIMEOUT,
        retry_policy=PROJECTION_RETRY,
        summary="pin this conversation's tools to a worker host",
    )


async def judge_call(request: JudgeInput) -> JudgeVerdict:
    """Whether a person's grant or the pre-screen decides a call the rules would bring to a person
    (activities/judge.py)."""
    return await workflow.execute_activity(
        JUDGE_CALL,
        request,
        result_type=JudgeVerdict,
        # The pre-screen's model call is bounded by its own timeout_seconds; a failed one is an `ask`.
        start_to_close_timeout=timedelta(minutes=2),
        heartbeat_timeout=timedelta(seconds=90),
        retry_policy=PROJECTION_RETRY,
        summary=f"does a grant cover {request.request_id}?",
    )


async def check_host(host_queue: str, within_seconds: float) -> HostCheck:
    """Whether a worker polled a host queue within the last `within_seconds`, asked of Temporal
    by any worker of the shared queue."""
    return await workflow.execute_activity(
        CHECK_HOST,
        args=[host_queue, within_seconds],
        result_type=HostCheck,
        start_to_close_timeout=PROJECTION_TIMEOUT,
        retry_policy=PROJECTION_RETRY,
        summary=f"is a worker polling {host_queue}?",
    )


async def run_tool(
    request: ToolRequest,
    source: str,
    summary: str,
    host_queue: str | None = None,
    schedule_to_start: timedelta | None = None,
) -> ToolResult:
    """host_queue: the host queue the conversation is pinned to (None: the workflow's own queue)."""
    return await start_tool(request, source, summary, host_queue, schedule_to_start)


def start_tool(
    request: ToolRequest,
    source: str,
    summary: str,
    host_queue: str | None = None,
    schedule_to_start: timedelta | None = None,
) -> workflow.ActivityHandle[ToolResult]:
    """The same call, its command issued now (not when a task first runs, which could put it after
    another's command); schedule_to_start: how long it may wait for a worker of its host."""
    return workflow.start_activity(
        TOOL_ACTIVITIES[source],
        request,
        task_queue=host_queue,
        result_type=ToolResult,
        schedule_to_start_timeout=schedule_to_start,
        start_to_close_timeout=timedelta(minutes=10),
        heartbeat_timeout=timedelta(seconds=10),
        retry_policy=TOOL_RETRY,
        summary=summary,
    )


async def project(
    payload: ConversationProjection | ApprovalRequestedProjection | ApprovalResolvedProjection | CompactionProjection,
) -> None:
    """Mirror state that history already holds into the read model."""
    if isinstance(payload, CompactionProjection):
        name = PROJECT_COMPACTION
        summary = f"projection: archive {len(payload.messages)} compacted message(s)"
    elif isinstance(payload, ApprovalRequestedProjection):
        name, summary = PROJECT_APPROVAL_REQUESTED, f"projection: {payload.approval.request_id} pending"
    elif isinstance(payload, ApprovalResolvedProjection):
        name = PROJECT_APPROVAL_RESOLVED
        summary = f"projection: {payload.approval.request_id} {payload.approval.resolution}"
    else:
        name, summary = PROJECT_CONVERSATION, f"projection: {payload.turn_status}"
    await workflow.execute_activity(
        name,
        payload,
        start_to_close_timeout=PROJECTION_TIMEOUT,
        retry_policy=PROJECTION_RETRY,
        summary=summary,
    )


async def project_resolution_locally(payload: ApprovalResolvedProjection) -> None:
    """The same write as `project`'s, as a local activity: it runs within the workflow task that
    took the decision, so a request that ends this way closes without another task's round trip."""
    await workflow.execute_local_activity(
        PROJECT_APPROVAL_RESOLVED,
        payload,
        start_to_close_timeout=PROJECTION_TIMEOUT,
        retry_policy=PROJECTION_RETRY,
        summary=f"projection: {payload.approval.request_id} {payload.approval.resolution}",
    )


async def project_approval_changed(record: ApprovalRecord, what: str) -> None:
    """A pending request's new deadline or approvers, for the doors that read the projection."""
    await workflow.execute_activity(
        PROJECT_APPROVAL_CHANGED,
        record,
        start_to_close_timeout=PROJECTION_TIMEOUT,
        retry_policy=PROJECTION_RETRY,
        summary=f"projection: {record.request_id} {what}",
    )


async def notify(notification: NotificationInput, give_up_after: timedelta) -> None:
    """Send one notification; retried with backoff until it is delivered or `give_up_after` passes."""
    await workflow.execute_activity(
        NOTIFY_APPROVAL,
        notification,
        start_to_close_timeout=timedelta(seconds=20),
        schedule_to_close_timeout=max(give_up_after, timedelta(minutes=1)),
        retry_policy=NOTIFY_RETRY,
        summary=f"notify {notification.channel}: {notification.kind} {notification.number} {notification.request_id}",
    )


async def service_rules(request_id: str) -> ServiceRules:
    """The deployment's rules, for an ApprovalRequest, and how an earlier run of the same request
    was decided: read by a worker, then kept in history."""
    return await workflow.execute_activity(
        SERVICE_RULES,
        request_id,
        result_type=ServiceRules,
        start_to_close_timeout=PROJECTION_TIMEOUT,
        retry_policy=PROJECTION_RETRY,
        summary="read the deployment's rules",
    )
