"""Previews and reasons for asked calls, and the re-ask of a call whose target changed.

When a call is asked, an activity on the tool's host previews its effect (core/previews.py) and
the workflow notes why the agent wants it (core/why.py); both go with the request to every door.
An approved call of a tool with a stale check (write_file; its definition says so, core/builtin/)
hands the preview's target hash to its activity, which refuses to write over content the person
did not see: that decision is recorded as stale and the same call is asked again under a new
request id, with a fresh preview that says what changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.chat_model import ChatMessage
    from core.conversation_model import ApprovalRecord, request_id_for
    from core.policy import asking_rule
    from core.policy_rules import PolicyRules
    from core.previews import EffectPreview, changed_note, dry_run_argument, pack_content
    from core.tool_model import ToolDef
    from core.tool_registry import main_argument_text
    from core.tool_run_model import PreviewInput
    from core.tool_specs import builtin_tool
    from core.why import EarlierDecision, WhyContext, why_for
    from workflows import activity_calls as calls

MAX_REASKS = 5  # a target that keeps changing: after this many re-asks the call is not run


def packed(request: PreviewInput) -> PreviewInput:
    """A write's content packed, for the local activity only: it never leaves this worker's code, so no
    other release ever reads a request in this form (one on a host queue holds the content as is)."""
    tool = builtin_tool(request.tool_name)
    if tool is None or tool.content is None or not isinstance(request.arguments.get(tool.content), str):
        return request
    content = request.arguments[tool.content]
    rest = {name: value for name, value in request.arguments.items() if name != tool.content}
    return request.model_copy(update={"arguments": rest, "packed_content": pack_content(content)})


class Previewer:
    def __init__(
        self,
        conversation_id: str,
        policy: PolicyRules,
        book: ApprovalBook,
        workspace: Callable[[], str | None],
        host_queue: Callable[[], Awaitable[str | None]],
        transcript: Callable[[], list[ChatMessage]],
        parent_task: str | None,
    ) -> None:
        self._conversation_id, self._policy, self._book = conversation_id, policy, book
        self._workspace, self._host_queue, self._transcript = workspace, host_queue, transcript
        self._parent_task = parent_task

    @staticmethod
    def enabled() -> bool:
        return workflow.patched(patches.EFFECT_PREVIEW)

    async def preview(self, tool: ToolDef, arguments: dict[str, Any], request_id: str) -> EffectPreview | None:
        """The call's preview, read on its host; None when this is not a call with one (a subagent)."""
        if tool.source == "subagent":
            return None
        builtin = builtin_tool(tool.name)
        shell = builtin is not None and builtin.effect == "shell"  # its preview names the rule that asked
        rule = asking_rule(self._policy, tool, main_argument_text(tool, arguments)) if shell else None
        request = PreviewInput(
            conversation_id=self._conversation_id,
            request_id=request_id,
            tool_name=tool.name if tool.source == "builtin" else f"{tool.source}:{tool.name}",
            arguments=arguments,
            workspace=self._workspace(),
            annotations=tool.annotations,
            rule=rule,
            dry_run_tool=tool if tool.source == "mcp" and dry_run_argument(tool.parameters) else None,
        )
        try:
            return await self._read_on_host(request)
        except ActivityError as err:
            why = f"no preview: {err.__cause__ or err}"
            return EffectPreview(kind="tool", summary=why, note=why)

    async def _read_on_host(self, request: PreviewInput) -> EffectPreview:
        """As a pinned tool goes (workflows/tool_dispatch.py): first where the workflow is (a local
        activity; before PREVIEW_IN_WORKFLOW_TASK an activity on the workflow's own queue), marked
        with its host, so the worker that holds the workflow reads it at once when it is that host;
        another host's worker reads nothing, and it then goes to the host queue."""
        host_queue = await self._host_queue()
        if workflow.patched(patches.PREVIEW_IN_WORKFLOW_TASK):  # read by this very worker, in this task
            here = await calls.preview_effect_locally(packed(request).model_copy(update={"run_on": host_queue}))
            return here if not here.wrong_host else await calls.preview_effect(request, host_queue)
        if host_queue is None:
            return await calls.preview_effect(request, None)
        here = await calls.preview_effect(request.model_copy(update={"run_on": host_queue}), None)
        if not here.wrong_host:
            return here
        return await calls.preview_effect(request, host_queue)

    def why(self, request_id: str) -> WhyContext:
        """The turn's request, the assistant's words before the call, and the earlier decisions."""
        messages = self._transcript()
        user = next((m.content for m in reversed(messages) if m.role == "user"), None)
        said = next((m.content for m in reversed(messages) if m.role == "assistant"), None)
        earlier = [
            EarlierDecision(
                request_id=rec.request_id,
                tool_name=rec.tool_name,
                resolution=rec.resolution,
                decided_by=rec.decided_by,
                reason=rec.reason,
            )
            for rec in self._book.records()
            if rec.resolution is not None and rec.request_id != request_id
        ]
        return why_for(user, said, earlier, self._parent_task)

    @staticmethod
    def target_hash(record: ApprovalRecord | None, tool_name: str) -> str | None:
        """What the write must still find: the hash the person's preview read."""
        tool = builtin_tool(tool_name)
        if record is None or record.preview is None or tool is None or not tool.stale_check:
            return None
        return record.preview.target_hash

    async def reask(self, stale: ApprovalRecord, call_id: str, attempt: int, tool: ToolDef) -> ApprovalRecord:
        """The same call as a new request (a new id, a fresh preview); the stale one says where it went."""
        again_id = f"{call_id}-again{attempt}"
        request_id = request_id_for(self._conversation_id, again_id)
        arguments = stale.edited_arguments or stale.arguments
        preview = await self.preview(tool, arguments, request_id)
        if preview is not None:
            preview = preview.model_copy(update={"changed_since": changed_note(stale.preview, preview)})
        stale.resolution, stale.reasked_as = "stale", request_id
        stale.reason = f"the target changed before it ran; not run, asked again as {request_id}"
        now = workflow.now()
        return stale.model_copy(
            update={
                "request_id": request_id,
                "tool_call_id": again_id,
                "arguments": arguments,
                "created_at": now,
                "expires_at": now + (stale.expires_at - stale.created_at),
                "preview": preview,
                "why": self.why(request_id),
                "resolution": None,
                "reason": None,
                "decided_by": None,
                "resolved_at": None,
                "decided_args_hash": None,
                "decided_via": None,
                "approved_by": [],
                "edited_arguments": None,
                "decided_groups": [],
                "extensions": [],
                "reasked_as": None,
                "supplied_by": {},
                "sealed_supplied": {},
            }
        )
