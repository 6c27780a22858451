"""What the tool activities are given and return: a call to run, preview or list, and its result."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from core.contract import SIGNAL_TOOL_STILL_RUNNING
from core.hosts import WorkspaceRestored, WorkspaceSaved
from core.projection_model import ApprovalResolvedProjection, ConversationProjection
from core.tool_model import ToolDef
from core.wire_model import WireModel


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
    # The host queue, under its wire name (recorded activity inputs hold it).
    run_on: str | None = Field(
        default=None, description="the host queue whose worker may run it; another host answers wrong_host"
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
    supplied: dict[str, str] = Field(
        default_factory=dict,
        description="the supplied_by_approver values as the approver's door sealed them: the activity unseals"
        " them into the arguments it gives the tool, and nowhere else",
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
    run_on: str | None = Field(default=None, description="as ToolRequest.run_on: the one host queue that may read it")
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
    turn_start: ConversationProjection | None = Field(
        default=None, description="the turn's start, written by the activity before it lists"
    )


class ToolResult(WireModel):
    content: str
    is_error: bool = False
    outcome_unknown: bool = False
    kv: dict[str, Any] | None = Field(default=None, description="new kv state when the tool changed it")
    wrong_host: bool = Field(default=False, description="not run: this worker is not on the request's host queue")
    stale_target: str | None = Field(default=None, description="not run: the target's hash now (it changed)")
    saved: WorkspaceSaved | None = Field(default=None, description="the workspace's save after the tool")
    restored: WorkspaceRestored | None = Field(default=None, description="the workspace restored before the tool")
