"""execute_tool: runs one validated, decided tool call, at most once when it has side effects."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from activities.builtin_tools import BUILTIN_TOOLS, KvStore, Workspace
from activities.ledger import Ledger, unknown_outcome_result
from activities.sandbox import SandboxPolicy, SandboxUnavailable
from projection.db import Writer
from workflows.activity_calls import EXECUTE_TOOL
from workflows.models import ToolRequest, ToolResult
from workflows.tool_specs import TOOL_SPECS, InvalidToolCall

SIDE_EFFECT_PERMISSIONS = frozenset({"write", "execute"})


class ToolActivities:
    def __init__(
        self, workspace_dir: Path, ledger: Ledger, projection: Writer, sandbox: SandboxPolicy | None = None
    ) -> None:
        self._workspace_dir = workspace_dir
        self._sandbox = sandbox or SandboxPolicy()
        self._ledger = ledger
        self._projection = projection

    @activity.defn(name=EXECUTE_TOOL)
    async def execute_tool(self, request: ToolRequest) -> ToolResult:
        spec = TOOL_SPECS[request.tool_name]
        once = spec.permission_type in SIDE_EFFECT_PERMISSIONS
        if once:
            claim = self._ledger.claim(request.request_id, request.tool_name, activity.info().attempt)
            if claim.verdict == "finished" and claim.result is not None:
                return claim.result
            if claim.verdict == "unknown":
                self._mark(request.request_id, "unknown")
                activity.logger.warning("not re-running %s: an earlier attempt started it", request.request_id)
                return unknown_outcome_result(request.tool_name, request.arguments)
            self._mark(request.request_id, "running")
        result = await self._run(request)
        if once:
            self._ledger.finish(request.request_id, result)
            self._mark(request.request_id, "done")
        return result

    async def _run(self, request: ToolRequest) -> ToolResult:
        kv = KvStore(request.kv)
        # Network is decided per call by the workflow from the policy's network rules.
        workspace = Workspace(self._workspace_dir, self._sandbox.with_network(request.network))
        activity.heartbeat()
        try:
            content = await BUILTIN_TOOLS[request.tool_name](workspace, kv, request.arguments, activity.heartbeat)
        except SandboxUnavailable as err:
            activity.logger.error("not running %s: %s", request.request_id, err)
            return ToolResult(content=f"Error: not run: {err}", is_error=True)
        except (InvalidToolCall, ValueError, OSError) as err:
            return ToolResult(content=f"Error: {err}", is_error=True)
        return ToolResult(content=content, kv=kv.values if kv.changed else None)

    def _mark(self, request_id: str, state: str) -> None:
        with self._projection.transaction() as conn:
            conn.execute(
                "UPDATE ui_pending_approvals SET execution_state = ? WHERE request_id = ?", (state, request_id)
            )
