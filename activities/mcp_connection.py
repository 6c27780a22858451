"""One running MCP server: started on demand, reused, restarted after a failure or a stray process.

The connection is kept open by an owner task (the SDK's transports must be entered and left in one
task) and shared by every call. A call or listing that fails drops it; the next one starts the
server again. A stdio server whose call leaves a process behind (`sleep 300 &`) is restarted after
that call, so nothing a call started outlives it: the sandbox's PID namespace ends with the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from activities.heartbeat import heartbeating
from activities.mcp_definitions import result_text, tool_definition
from activities.mcp_elicitation import Asker, ElicitationDesk, timeout_for
from activities.mcp_launch import stdio_parameters
from activities.mcp_stderr import StderrTail
from activities.sandbox import SandboxPolicy, SandboxUnavailable
from config.tools_section import McpServerConfig
from core.tool_model import ToolDef
from core.tool_run_model import ToolResult

log = logging.getLogger("activities.mcp_servers")
OPEN_TIMEOUT_SECONDS = 30.0
INSTANCE_VARIABLE = "MCP_SERVER_INSTANCE"  # marks the process this connection started


class McpServerFailed(RuntimeError):
    """A stdio server ended before it answered; the message holds the last lines of its stderr."""


def reason(err: BaseException) -> str:
    """The innermost error of the SDK's task-group wrappers, which say nothing on their own."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"


def _tree(process: psutil.Process | None, whole_session: bool) -> set[tuple[int, float]]:
    """The live descendants of the server's process, as (pid, start time). Unsandboxed, also every
    process of its session: an orphan there is reparented away from the server's tree, while in the
    sandbox's PID namespace it stays below it."""
    if process is None:
        return set()
    found: set[tuple[int, float]] = set()
    with contextlib.suppress(psutil.Error):
        members = process.children(recursive=True)
        if whole_session:
            session = _session(process.pid)
            members += [p for p in psutil.process_iter() if p.pid != process.pid and _session(p.pid) == session]
        for child in members:
            with contextlib.suppress(psutil.Error):
                if child.status() != psutil.STATUS_ZOMBIE:
                    found.add((child.pid, child.create_time()))
    return found


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


class McpConnection:
    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        workspace: Path,
        sandbox: SandboxPolicy,
        desk: ElicitationDesk | None = None,
    ) -> None:
        self.name = name
        self._desk = desk if config.elicitation else None
        self._askers: list[Asker] = []  # the calls in flight that a question could belong to
        self.config = config
        self.workspace = workspace
        self._sandbox = sandbox
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._stderr: StderrTail | None = None
        self._instance = ""
        self._process: psutil.Process | None = None
        self.busy = 0
        self._calls = 0  # tools/call requests in flight
        self.retired = False  # no longer in the pool: stopped when its last call ends
        self.last_used = time.monotonic()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[McpConnection]:
        """Keep this instance from being closed as idle or least recently used while a request uses it."""
        self.busy += 1
        try:
            yield self
        finally:
            self.busy -= 1
            self.last_used = time.monotonic()
            if self.retired and not self.busy:
                await self.reset()

    @property
    def running(self) -> bool:
        return self._client is not None and self._owner is not None and not self._owner.done()

    async def _new_client(self) -> Client:
        if self.config.command is not None:
            # Working out the launch reads the server's installation and may probe the launchers
            # and hand a workspace's tree to the sandbox uid: tens of milliseconds, off the loop.
            parameters = await asyncio.to_thread(stdio_parameters, self.config, self.workspace, self._sandbox)
            self._instance = uuid.uuid4().hex
            parameters.env = {**(parameters.env or {}), INSTANCE_VARIABLE: self._instance}
            self._stderr = StderrTail(self.name)
            transport: Any = stdio_client(parameters, errlog=self._stderr.file)
        else:
            assert self.config.url is not None
            http = create_mcp_http_client(headers=dict(self.config.headers))
            transport = streamable_http_client(self.config.url, http_client=http)
        # Elicitation is declared to the server only with a desk: only then can a person answer.
        answering = self._elicit if self._desk is not None else None
        return Client(
            transport, cache=None, read_timeout_seconds=self.config.timeout_seconds, elicitation_callback=answering
        )

    async def _elicit(self, context: Any, params: Any) -> Any:
        assert self._desk is not None
        asker = self._askers[0] if len(self._askers) == 1 else None
        wait = timeout_for(self.config.timeout_seconds, self.config.elicitation_timeout_seconds)
        return await self._desk.ask(asker, params, wait)

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        try:
            async with await self._new_client() as client:
                ready.set_result(client)
                await self._stop.wait()
        except asyncio.CancelledError:
            ready.cancel()
            raise
        except BaseException as err:
            if not ready.done():
                ready.set_exception(err)
            else:
                log.warning("MCP server %s: connection ended: %r", self.name, err)

    def _find_process(self) -> psutil.Process | None:
        """The process the SDK started for this connection (the sandbox's launcher, or the server)."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process().children():
                with contextlib.suppress(psutil.Error):
                    if child.environ().get(INSTANCE_VARIABLE) == self._instance:
                        return child
        return None

    async def client(self) -> Client:
        async with self._lock:
            if not self.running:
                self._stderr = None  # the last start's lines are not this start's reason
                self._stop = asyncio.Event()
                ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
                self._owner = asyncio.create_task(self._own(ready), name=f"mcp-{self.name}")
                try:
                    self._client = await asyncio.wait_for(asyncio.shield(ready), OPEN_TIMEOUT_SECONDS)
                except BaseException as err:
                    await self._drop()
                    if ready.done() and not ready.cancelled():
                        ready.exception()  # seen: the caller raises its own error
                    said: list[str] = self._stderr.last_lines() if self._stderr is not None else []
                    if said and not isinstance(err, (asyncio.CancelledError, SandboxUnavailable)):
                        raise McpServerFailed(f"{reason(err)}; its stderr ended with:\n" + "\n".join(said)) from err
                    raise
                if self._stderr is not None:
                    self._stderr.release()
                    self._process = self._find_process()
                log.info("MCP server %s: connected (%s) in %s", self.name, self.config.transport, self.workspace)
            assert self._client is not None
            return self._client

    async def _drop(self) -> None:
        """End the owner task: a connected one leaves its context (stopping a stdio server), one
        still connecting is canceled; either way it is awaited, so nothing is left half-closed."""
        connected, self._client = self._client is not None, None
        owner, self._owner = self._owner, None
        self._process = None
        self._stop.set()
        if self._stderr is not None:
            self._stderr.release()
        if owner is None or owner.done():
            return
        if not connected:
            owner.cancel()
        try:
            await asyncio.wait_for(owner, 10)
        except (TimeoutError, asyncio.CancelledError):
            log.warning("MCP server %s: did not close in time", self.name)
        except Exception:  # the owner already logged how it ended
            log.debug("MCP server %s: closed after an error", self.name)

    async def reset(self) -> None:
        """Drop the connection (stopping a stdio server); the next use starts a fresh one."""
        async with self._lock:
            await self._drop()

    async def list_tools(self) -> list[ToolDef]:
        try:
            client = await self.client()
            tools: list[ToolDef] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(tool_definition(self.name, self.config, tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
        except BaseException:
            await self.reset()
            raise

    async def call(
        self, tool: ToolDef, arguments: dict[str, Any], beat: Callable[[], None], asker: Asker | None = None
    ) -> ToolResult:
        """One tools/call; a broken connection is dropped and the error raised, so Temporal retries.
        asker: who a question the server asks during the call is shown as coming from."""
        async with self.held(), self._asking(asker):
            self._calls += 1
            try:
                client = await self.client()
                before = _tree(self._process, not self._sandbox.enabled)
                result = await heartbeating(
                    client.call_tool(
                        tool.remote_name or tool.name, arguments, read_timeout_seconds=self.config.timeout_seconds
                    ),
                    beat,
                )
            except BaseException:
                self._calls -= 1
                await self.reset()
                raise
            self._calls -= 1
            await self._end_strays(before, tool)
        return result_text(result)

    @contextlib.asynccontextmanager
    async def _asking(self, asker: Asker | None) -> AsyncIterator[None]:
        if asker is not None:
            self._askers.append(asker)
        try:
            yield
        finally:
            if asker is not None:
                self._askers.remove(asker)

    async def _end_strays(self, before: set[tuple[int, float]], tool: ToolDef) -> None:
        """Processes the call started and left running: the server is restarted, and they end."""
        stray = _tree(self._process, not self._sandbox.enabled) - before
        if not stray or self._calls:  # another call in flight may own them: its own end decides
            return
        log.warning(
            "MCP server %s: %s left %d process(es) running (pids %s); restarting the server",
            self.name,
            tool.remote_name or tool.name,
            len(stray),
            ", ".join(str(pid) for pid, _ in sorted(stray)),
        )
        for pid, started in stray:
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                if process.create_time() == started:
                    process.kill()
        await self.reset()
