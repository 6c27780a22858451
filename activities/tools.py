"""execute_tool: runs one validated, decided tool call, at most once when it has side effects."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from activities.builtin_tools import BUILTIN_TOOLS, KvStore, Workspace
from activities.ledger import Ledger, unknown_outcome_result
from projection.store import ProjectionStore
from workflows.activity_calls import EXECUTE_TOOL
from workflows.models import ToolRequest, ToolResult
from workflows.tool_specs import TOOL_SPECS, InvalidToolCall

SIDE_EFFECT_PERMISSIONS = frozenset({"write", "execute"})


class ToolActivities:
    def __init__(self, workspace_dir: Path, ledger: Ledger, projection: ProjectionStore) -> None:
        self._workspace = Workspace(workspace_dir)
        self._ledger = ledger
        self._projection = projection

    @activity.defn(name=EXECUTE_TOOL)
    async def execute_tool(self, request: ToolRequest) -> ToolResult:
        spec = TOOL_SPECS[request.tool_name]
        once = spec.permission_type in SIDE_EFFECT_PERMISSIONS
        if once:
            attempt = activity.info().attempt
            claim = await self._ledger.claim(request.request_id, request.tool_name, attempt)
            if claim.verdict == "finished" and claim.result is not None:
                await self._projection.mark_execution(request.request_id, "done")
                return claim.result
            if claim.verdict == "unknown":
                await self._projection.mark_execution(request.request_id, "unknown")
                activity.logger.warning("not re-running %s: an earlier attempt started it", request.request_id)
                return unknown_outcome_result(request.tool_name, request.arguments)
            await self._projection.mark_execution(request.request_id, "running")
            # Only now does the ledger count the tool as started: a failure before this line (the
            # projection write above, say) leaves the claim re-runnable by the next attempt.
            if not await self._ledger.start(request.request_id, attempt):
                activity.logger.warning("not running %s: a later attempt owns it", request.request_id)
                return unknown_outcome_result(request.tool_name, request.arguments)
        result = await self._run(request)
        if once:
            await self._ledger.finish(request.request_id, result)
            await self._projection.mark_execution(request.request_id, "done")
        return result

    async def _run(self, request: ToolRequest) -> ToolResult:
        kv = KvStore(request.kv)
        activity.heartbeat()
        try:
            content = await BUILTIN_TOOLS[request.tool_name](self._workspace, kv, request.arguments, activity.heartbeat)
        except (InvalidToolCall, ValueError, OSError) as err:
            return ToolResult(content=f"Error: {err}", is_error=True)
        return ToolResult(content=content, kv=kv.values if kv.changed else None)
