"""The tool activities: list a turn's tools, and run one validated, decided call of any source,
at most once when it has side effects."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from temporalio import activity

from activities.builtin_tools import KvStore, Workspace
from activities.file_state import TargetChanged, write_if_unchanged
from activities.ledger import Claim, Ledger, unknown_outcome_result
from activities.mcp_elicitation import Asker
from activities.previews import preview_effect
from activities.python_tools import run_python_tool
from activities.sandbox import SandboxPolicy, SandboxUnavailable
from activities.still_running import telling_when_long
from activities.store_waits import result_stored, when_stored
from activities.tool_sources import ToolSources
from activities.undo import prepare_undo
from activities.worker_metrics import OUTCOME_UNKNOWN, TOOL_RUNS
from activities.workspace_saves import WorkspaceSaves
from activities.workspaces import Ready, no_wait, workspace_for
from config.supplied_secret import BadSeal, unseal_all
from config.tools_section import DEFAULT_MAX_READ_BYTES, ToolsConfig
from core.hosts import EVENT_NOT_SAVED, WorkspaceRestored, WorkspaceSaved
from core.previews import EffectPreview, content_hash, dry_run_argument, with_dry_run
from core.projection_model import ConversationProjection, ProjectionEvent
from core.tool_model import ToolCatalog, ToolDef
from core.tool_run_model import ListToolsInput, PreviewInput, ToolRequest, ToolResult
from core.tool_specs import TOOL_SPECS, InvalidToolCall, builtin_tool
from core.undo import PrepareUndoInput, UndoPlan
from storage.previous_content import PreviousContent
from storage.store import ProjectionStore
from workflows.activity_calls import (
    CALL_MCP_TOOL,
    EXECUTE_TOOL,
    LIST_TOOLS,
    PREPARE_UNDO,
    PREVIEW_EFFECT,
    RUN_PYTHON_TOOL,
)
from workflows.approved_calls import write_handed_resolution

# A tool's code, given its request (arguments), a heartbeat and the ledger's go-ahead.
ToolRun = Callable[[ToolRequest, Callable[[], None], Ready], Awaitable[ToolResult]]


class ToolActivities:
    def __init__(
        self,
        workspace_dir: Path,
        ledger: Ledger,
        projection: ProjectionStore,
        sources: ToolSources | None = None,
        sandbox: SandboxPolicy | None = None,
        host_queue: str | None = None,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        undo_retention_seconds: float = 7 * 86400.0,
        saves: WorkspaceSaves | None = None,
        supplied_key: bytes | None = None,
    ) -> None:
        self._saves = saves  # None: workspaces are not saved (WORKSPACE_SAVES off)
        self._supplied_key = supplied_key  # opens the values approvers supplied (config/supplied_secret.py)
        self._undo_retention = undo_retention_seconds
        self._workspace_dir = workspace_dir
        self._max_read_bytes = max_read_bytes
        self._host_queue = host_queue  # this worker's host queue: it runs requests meant for it
        self._sandbox = sandbox or SandboxPolicy()
        self._ledger = ledger
        self._projection = projection
        self.sources = sources or ToolSources(ToolsConfig(), workspace_dir)

    @activity.defn(name=LIST_TOOLS)
    async def list_tools(self, request: ListToolsInput) -> ToolCatalog:
        """The turn's tools; first the turn's start, when the workflow sends it (see ListToolsInput).
        A read model that refuses that write does not fail the listing: the workflow then writes the
        start with its own projection activity, retried until the read model takes it."""
        activity.heartbeat()
        wrote = request.turn_start is not None and await self._write_turn_start(request.turn_id, request.turn_start)
        listed = await self.sources.catalog(request.workspace)
        return listed.model_copy(update={"wrote_turn_start": True}) if wrote else listed

    async def _write_turn_start(self, turn_id: str, start: ConversationProjection) -> bool:
        try:
            await self._projection.project_conversation(start)
        except Exception as err:
            activity.logger.warning("the start of %s is left to the workflow: %s", turn_id, err)
            return False
        return True

    @activity.defn(name=PREVIEW_EFFECT)
    async def preview_effect(self, request: PreviewInput) -> EffectPreview:
        """What an asked call will change, read in the call's own workspace and confinement."""
        if request.run_on is not None and request.run_on != self._host_queue:
            return EffectPreview(kind="tool", summary="not read: another host's workspace", wrong_host=True)
        beat = _no_beat if activity.info().is_local else activity.heartbeat  # a local activity has none
        preview = await preview_effect(self._workspace(request.workspace, False), request, beat)
        if request.dry_run_tool is not None:
            return await self._dry_run(request, request.dry_run_tool, preview, beat)
        return preview

    async def _dry_run(
        self, request: PreviewInput, tool: ToolDef, preview: EffectPreview, beat: Callable[[], None]
    ) -> EffectPreview:
        """The MCP tool's own dry run of the asked call, on the server instance that would run it
        (the call's workspace, its sandbox): the tool says what it would change, and changes nothing."""
        argument = dry_run_argument(tool.parameters)
        if argument is None or tool.origin not in self.sources.mcp.configs:
            return preview
        if tool.supplied_by_approver:  # its values come with the approval, after any preview
            return with_dry_run(preview, "not tried: it needs what the approver supplies", True)
        connection = self.sources.mcp.connection(tool.origin, request.workspace)
        try:
            result = await connection.call(tool, {**request.arguments, argument: True}, beat)
        except Exception as err:  # the card then shows the call without it, and says why
            return with_dry_run(preview, str(err) or type(err).__name__, True)
        return with_dry_run(preview, result.content, result.is_error)

    def _workspace(self, key: str | None, network: bool, ready: Ready = no_wait) -> Workspace:
        root = workspace_for(self._workspace_dir, key)
        return Workspace(root, self._sandbox.with_network(network), self._max_read_bytes, ready)

    @activity.defn(name=PREPARE_UNDO)
    async def prepare_undo(self, request: PrepareUndoInput) -> UndoPlan:
        """What an undo of an approved write would restore, or why it must refuse."""
        return await prepare_undo(
            self._workspace(request.workspace, False), self._projection, request, activity.heartbeat
        )

    @activity.defn(name=EXECUTE_TOOL)
    async def execute_tool(self, request: ToolRequest) -> ToolResult:
        if self._elsewhere(request):
            return WRONG_HOST
        return await self._once(request, TOOL_SPECS[request.tool_name], self._run_builtin, self._beside(request))

    @activity.defn(name=RUN_PYTHON_TOOL)
    async def run_python_tool(self, request: ToolRequest) -> ToolResult:
        if self._elsewhere(request):
            return WRONG_HOST
        beside = self._beside(request)
        try:
            tool = _definition(request)
            found = self.sources.python.get(tool.name)
            if found is None:
                return ToolResult(content=f"Error: this worker has no Python tool {tool.name!r}", is_error=True)
            entry = found[1]

            async def run(r: ToolRequest, beat: Callable[[], None], ready: Ready) -> ToolResult:
                await ready()
                return await run_python_tool(entry, r.arguments, beat)

            return await self._once(request, tool, run, beside)
        finally:
            await beside.finish()

    @activity.defn(name=CALL_MCP_TOOL)
    async def call_mcp_tool(self, request: ToolRequest) -> ToolResult:
        if self._elsewhere(request):
            return WRONG_HOST
        beside = self._beside(request)
        try:
            return await self._call_mcp_tool(request, beside)
        finally:
            await beside.finish()

    async def _call_mcp_tool(self, request: ToolRequest, beside: ToolStartWrites) -> ToolResult:
        tool = _definition(request)
        # The instance of the server for this request's workspace (each workspace has its own).
        if tool.origin not in self.sources.mcp.configs:
            return ToolResult(content=f"Error: this worker has no MCP server {tool.origin!r}", is_error=True)
        connection = self.sources.mcp.connection(tool.origin, request.workspace)
        async with connection.held():
            # Connect before the ledger claim: a server that cannot be reached never ran the call.
            try:
                await connection.client()
            except SandboxUnavailable as err:
                await beside.finish()  # the resolution before the execution state it explains
                activity.logger.error("not running %s: %s", request.request_id, err)
                if tool.at_most_once:  # shown as a built-in that could not start is
                    await self._projection.mark_execution(request.request_id, "failed")
                return ToolResult(content=f"Error: not run: {err}", is_error=True)
            asker = Asker(request.conversation_id, request.request_id, tool, request.arguments)

            async def run(r: ToolRequest, beat: Callable[[], None], ready: Ready) -> ToolResult:
                await ready()
                return await connection.call(tool, r.arguments, beat, asker)

            return await self._once(request, tool, run, beside)

    def _beside(self, request: ToolRequest) -> ToolStartWrites:
        """The writes that go beside this call's tool: its approval's resolution, when it was handed
        one (workflows/approved_calls.py), written whatever the tool does."""
        beside = ToolStartWrites()
        if request.resolved is not None:
            what = f"the resolution of {request.request_id}"
            beside.add(lambda: when_stored(lambda: write_handed_resolution(request, self._projection), what))
        return beside

    def _elsewhere(self, request: ToolRequest) -> bool:
        """The request names another host (see workflows/tool_dispatch.py): nothing may run here."""
        return request.run_on is not None and request.run_on != self._host_queue

    async def _once(
        self,
        request: ToolRequest,
        tool: ToolDef,
        run: ToolRun,
        beside: ToolStartWrites | None = None,
    ) -> ToolResult:
        """Run through the execution ledger when the tool has side effects: never twice. A call that
        moved here from another host restores the workspace first; a tool that may write saves it
        after, before its result is recorded (activities/workspace_saves.py)."""
        beside = beside or ToolStartWrites()
        try:
            supplied = self._unsealed(request)
        except BadSeal as err:
            await beside.finish()
            activity.logger.error("not running %s: %s", request.request_id, err)
            return ToolResult(content=f"Error: not run: {err}", is_error=True)
        if supplied:
            run = _given(run, supplied)
        try:
            restored = await self._restore(request)
            async with telling_when_long(request):
                result = await self._once_beside(request, tool, run, beside)
        finally:
            await beside.finish()
        saved = await self._save(request) if tool.at_most_once else None
        if restored is not None or saved is not None:
            result = result.model_copy(update={"restored": restored, "saved": saved})
        if tool.at_most_once:  # a retry could only return the ledger's copy: it must reach the workflow
            await result_stored(result, f"the result of {request.request_id}")
        return result

    def _unsealed(self, request: ToolRequest) -> dict[str, str]:
        """The values the approver supplied, opened for the tool alone: the request keeps the
        model's arguments, so nothing written or logged about the call holds them."""
        if not request.supplied:
            return {}
        if self._supplied_key is None:
            raise BadSeal("this worker has no key to open the values the approver supplied")
        return unseal_all(self._supplied_key, request.request_id, request.supplied)

    async def _restore(self, request: ToolRequest) -> WorkspaceRestored | None:
        if request.restore_from is None or self._saves is None:
            return None
        root = workspace_for(self._workspace_dir, request.workspace)
        activity.heartbeat()
        restored = await self._saves.restore(root.name, root)
        if restored is not None and os.geteuid() == 0 and root.is_dir():
            # What the restore wrote is root's: the workspace goes back to root, so the sandbox's
            # next launch hands it to the sandbox uid whole again (sandbox_identity.give_workspace).
            os.chown(root, 0, 0, follow_symlinks=False)
        activity.logger.info(
            "workspace %s restored on this host after a move from %s: %s",
            root.name,
            request.restore_from,
            "no save found" if restored is None else f"{restored.files} files saved at {restored.saved_at}",
        )
        return restored

    async def _save(self, request: ToolRequest) -> WorkspaceSaved | None:
        saves = self._saves
        if saves is None:
            return None
        root = workspace_for(self._workspace_dir, request.workspace)
        activity.heartbeat()
        saved = await when_stored(lambda: saves.save(root.name, root), f"the save of workspace {root.name}")
        if saved.skipped:  # said where a person looks: the log, and the conversation's events (`show`)
            activity.logger.warning("workspace %s not saved: %s", root.name, saved.skipped)
            notice = ProjectionEvent(
                event_key=f"{request.conversation_id}:{request.request_id}:{EVENT_NOT_SAVED}",
                event_type=EVENT_NOT_SAVED,
                conversation_id=request.conversation_id,
                payload={"request_id": request.request_id, "reason": saved.skipped},
            )
            try:
                await self._projection.append_stream_event(notice)
            except Exception as err:
                activity.logger.warning("could not show that %s was not saved: %s", root.name, err)
        return saved

    async def _once_beside(
        self,
        request: ToolRequest,
        tool: ToolDef,
        run: ToolRun,
        beside: ToolStartWrites,
    ) -> ToolResult:
        if not tool.at_most_once:
            activity.heartbeat()
            done = await run(request, beside.beat, no_wait)
            TOOL_RUNS.labels(request.tool_name, _finished(done)).inc()
            return done
        # One transaction claims the request and counts the tool as started (Ledger.begin). It is
        # taken at once, or while the tool prepares its launch, and the tool awaits it right before
        # it changes anything (`ready`, see Workspace.ready): nothing that can fail comes between
        # the two, so a failed attempt either left no trace (the next one runs it) or had started
        # the tool (the next one reports unknown).
        claim = self._claim(request, activity.info().attempt)
        gate = LedgerGate(claim, lambda: beside.add(lambda: self._mark_running(request.request_id)))
        activity.heartbeat()
        result: ToolResult | None = None
        try:
            if not claim.done():
                # One turn of the loop lets the claim send its statement before the launch's
                # preparation, which holds the loop once the launcher is chosen (sandbox_run.py).
                await asyncio.sleep(0)
            result = await run(request, beside.beat, gate.ready)
        except NotThisAttempt:
            pass
        finally:
            await gate.settled()  # whatever the tool did, the claim is not left running
        settled = claim.result()
        if settled.verdict == "finished" and settled.result is not None:
            await self._mark(request.request_id, _finished(settled.result))
            return settled.result
        if settled.verdict == "unknown":
            OUTCOME_UNKNOWN.labels(request.tool_name).inc()
            await self._mark(request.request_id, "unknown")
            activity.logger.warning("not re-running %s: an earlier attempt started it", request.request_id)
            return unknown_outcome_result(request.tool_name, request.arguments)
        assert result is not None  # the claim is this attempt's: the tool ran or changed nothing
        try:
            await beside.finish()  # "running" is written before the finished state can be
        except Exception:  # the read model out of reach: a retry must still find the tool's result
            await self._ledger.finish(request.request_id, result)  # waits for the ledger itself
            raise
        TOOL_RUNS.labels(request.tool_name, _finished(result)).inc()
        # Both end before the activity does, even when the mark fails: the ledger's result is what a
        # retry returns, instead of reporting an outcome it would no longer know.
        for outcome in await asyncio.gather(
            self._ledger.finish(request.request_id, result),
            self._mark(request.request_id, _finished(result)),
            return_exceptions=True,
        ):
            if isinstance(outcome, BaseException):
                raise outcome
        return result

    async def _mark(self, request_id: str, state: str) -> None:
        await when_stored(
            lambda: self._projection.mark_execution(request_id, state), f"the {state} mark of {request_id}"
        )

    def _claim(self, request: ToolRequest, attempt: int) -> asyncio.Future[Claim]:
        """The ledger's claim: taken at once when the store can take it without waiting (see
        Ledger.begin_at_once), else by a task that runs while the tool prepares its launch (and,
        on a full disk, waits for room: the tool does not start until it is taken)."""
        now = self._ledger.begin_at_once(request.request_id, request.tool_name, attempt)
        if now is None:
            # Ledger.begin waits for a ledger that refuses it: the tool does not start until it is taken.
            return asyncio.ensure_future(self._ledger.begin(request.request_id, request.tool_name, attempt))
        taken: asyncio.Future[Claim] = asyncio.get_running_loop().create_future()
        taken.set_result(now)
        return taken

    async def _mark_running(self, request_id: str) -> None:
        try:
            await self._projection.mark_execution(request_id, "running")
        except Exception as err:  # the finished state is written after the tool and corrects it
            activity.logger.warning("could not show %s as running: %s", request_id, err)

    async def _run_builtin(self, request: ToolRequest, beat: Callable[[], None], ready: Ready) -> ToolResult:
        kv = KvStore(request.kv)
        # Network is decided per call by the workflow from the policy's network rules; the
        # directory by the request's workspace key (the conversation's, or its parent's).
        workspace = self._workspace(request.workspace, request.network, ready)
        try:
            tool = builtin_tool(request.tool_name)
            assert tool is not None  # execute_tool runs built-ins only (TOOL_SPECS above)
            if tool.stale_check and request.target_hash is not None:
                path, text = tool.written(request.arguments)
                data = text.encode()
                written = await write_if_unchanged(workspace, path, data, request.target_hash, beat)
                if tool.undo:
                    await self._keep_previous(request, written.previous, data)
                content = written.message
            else:
                content = await tool.run(workspace, kv, request.arguments, beat)
        except TargetChanged as err:
            activity.logger.warning("not running %s: %s", request.request_id, err)
            return ToolResult(content=f"Not run: {err}.", stale_target=err.now_hash)
        except SandboxUnavailable as err:
            activity.logger.error("not running %s: %s", request.request_id, err)
            return ToolResult(content=f"Error: not run: {err}", is_error=True)
        except (InvalidToolCall, ValueError, OSError) as err:
            return ToolResult(content=f"Error: {err}", is_error=True)
        return ToolResult(content=content, kv=kv.values if kv.changed else None)

    async def _keep_previous(self, request: ToolRequest, previous: bytes | None, written: bytes) -> None:
        """What an approved write replaced, for an undo; a write of a new file replaced nothing."""
        if previous is None:
            return
        kept = PreviousContent(
            request_id=request.request_id,
            conversation_id=request.conversation_id,
            path=request.arguments["path"],
            before=previous,
            before_hash=content_hash(previous),
            after_hash=content_hash(written),
            stored_at=datetime.now(UTC).isoformat(),
        )
        try:
            await self._projection.keep_previous_content(kept, self._undo_retention)
        except Exception as err:  # the write happened: a lost undo copy must not turn it into a failure
            activity.logger.warning("could not keep what %s replaced: %s", request.request_id, err)


class ToolStartWrites:
    """Read-model writes that go beside a tool run (its approval's resolution, its "running" mark).
    They start once the tool has started, at its first heartbeat, so they do not compete with its
    launch, and are awaited before the activity returns or fails, whatever the tool did: a retry
    after a failed write finds the run in the ledger. A tool that never beats has them at its end."""

    def __init__(self) -> None:
        self._waiting: list[Callable[[], Awaitable[None]]] = []
        self._running: list[asyncio.Task[None]] = []

    def add(self, write: Callable[[], Awaitable[None]]) -> None:
        self._waiting.append(write)

    def beat(self) -> None:
        """The tool's heartbeat: the first one says it has started."""
        self._start()
        activity.heartbeat()

    def _start(self) -> None:
        self._running += [asyncio.ensure_future(write()) for write in self._waiting]
        self._waiting.clear()

    async def finish(self) -> None:
        """Every write done; the first that failed raises."""
        self._start()
        running, self._running = self._running, []
        failed = [out for out in await asyncio.gather(*running, return_exceptions=True) if out is not None]
        if failed:
            raise failed[0]


def _no_beat() -> None:
    pass


def _given(run: ToolRun, supplied: dict[str, str]) -> ToolRun:
    """The tool's run, given the supplied values among its arguments (a copy of the request that
    only the tool's own code sees)."""

    async def given(request: ToolRequest, beat: Callable[[], None], ready: Ready) -> ToolResult:
        return await run(request.model_copy(update={"arguments": {**request.arguments, **supplied}}), beat, ready)

    return given


class NotThisAttempt(Exception):
    """The ledger gave the request to another attempt, or found it settled: the tool must not start."""


class LedgerGate:
    """The tool's `ready`: waits for the ledger's claim, raises NotThisAttempt unless it is this
    attempt's, and the first time it is, adds the "running" mark beside the tool (`owned`)."""

    def __init__(self, claim: asyncio.Future[Claim], owned: Callable[[], None]) -> None:
        self._claim = claim
        self._owned: Callable[[], None] | None = owned

    async def ready(self) -> None:
        if (await asyncio.shield(self._claim)).verdict != "run":
            raise NotThisAttempt()
        owned, self._owned = self._owned, None
        if owned is not None:
            owned()

    async def settled(self) -> None:
        """The claim ended, whether or not the tool waited for it. Its failure is marked as seen:
        the caller reads the claim's result unless the tool's own failure goes first."""
        await asyncio.wait([self._claim])
        if not self._claim.cancelled():
            self._claim.exception()


WRONG_HOST = ToolResult(content="not run: this worker is not on the conversation's host", wrong_host=True)


def _finished(result: ToolResult) -> str:
    """The execution state of a run that ended: `failed` when the tool returned an error, `stale`
    when its target changed and it did not run."""
    if result.stale_target is not None:
        return "stale"
    return "failed" if result.is_error else "done"


def _definition(request: ToolRequest) -> ToolDef:
    if request.tool is None:
        raise ValueError(f"request {request.request_id} holds no tool definition")
    return request.tool
