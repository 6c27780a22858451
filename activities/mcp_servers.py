"""MCP servers as the worker holds them: one running instance per server and workspace.

A stdio server works in a conversation's workspace (activities/workspaces.py) unless its
configuration sets `cwd`, so each workspace key gets its own instance: no conversation's server
sees another's files. Instances start on demand, the least recently used is closed when more than
`max_running` run, and one idle for `idle_seconds` is closed. HTTP servers and stdio servers with
a fixed `cwd` have one instance. Tool definitions do not depend on the workspace: a server's
listing is kept, so a conversation that lists tools without calling one starts no server.
`close()` stops them all with the worker. The MCP SDK is imported with the first connection: a
worker with no MCP server configured starts a second sooner without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from activities.mcp_elicitation import ElicitationDesk
from activities.sandbox import SandboxPolicy
from activities.workspaces import holds_workspaces, workspace_for
from config.tools_section import McpServerConfig
from core.tool_model import ToolDef

if TYPE_CHECKING:
    from activities.mcp_connection import McpConnection

log = logging.getLogger(__name__)
IDLE_SECONDS = 300.0
MAX_RUNNING = 16
REASON_CHARS = 1500

InstanceKey = tuple[str, str | None]


def _bounded(why: str) -> str:
    """A reason short enough for the history: its start (the error) and its end (the server's last words)."""
    if len(why) <= REASON_CHARS:
        return why
    head = REASON_CHARS // 4
    return f"{why[:head]} ... {why[-(REASON_CHARS - head) :]}"


class McpServers:
    """Every configured server by name; stdio ones start in `sandbox` (the worker's tool sandbox)."""

    def __init__(
        self,
        configs: dict[str, McpServerConfig],
        workspace_root: Path,
        sandbox: SandboxPolicy | None = None,
        *,
        idle_seconds: float = IDLE_SECONDS,
        max_running: int = MAX_RUNNING,
        desk: ElicitationDesk | None = None,
    ) -> None:
        for name, config in configs.items():
            fixed = config.cwd if config.command is not None else None
            if fixed is not None and holds_workspaces(Path(fixed), workspace_root):
                raise ValueError(
                    f"[mcp_servers.{name}] cwd {config.cwd} holds WORKSPACE_DIR ({workspace_root}), so the server"
                    " would reach every conversation's workspace: leave cwd out (each conversation's own"
                    " workspace) or name a directory outside WORKSPACE_DIR"
                )
        self.configs = dict(configs)
        self._root = workspace_root
        self._desk = desk  # set in a worker: servers' questions go to the inbox
        self._sandbox = SandboxPolicy() if sandbox is None else sandbox
        self.idle_seconds = idle_seconds
        self._max_running = max_running
        self._instances: OrderedDict[InstanceKey, McpConnection] = OrderedDict()
        self._listed: dict[str, list[ToolDef]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def _key(self, name: str, workspace: str | None) -> InstanceKey:
        config = self.configs[name]
        shared = config.command is None or config.cwd is not None
        return (name, None if shared else workspace or None)

    def connection(self, name: str, workspace: str | None = None) -> McpConnection:
        """The instance of configured server `name` for this workspace key (created, not started)."""
        key = self._key(name, workspace)
        found = self._instances.get(key)
        if found is None:
            from activities.mcp_connection import McpConnection  # the MCP SDK loads with the first server

            found = McpConnection(
                name, self.configs[name], workspace_for(self._root, key[1]), self._sandbox, self._desk
            )
            self._instances[key] = found
            self._make_room(key)
        self._instances.move_to_end(key)
        found.last_used = time.monotonic()
        self._start_sweeper()
        return found

    def running(self) -> list[McpConnection]:
        return [c for c in self._instances.values() if c.running]

    def _make_room(self, keep: InstanceKey) -> None:
        """Close the least recently used instances beyond the cap (never one in a call)."""
        excess = len(self._instances) - self._max_running
        for key, connection in list(self._instances.items()):
            if excess <= 0:
                return
            if key == keep or connection.busy:
                continue
            del self._instances[key]
            excess -= 1
            connection.retired = True
            if connection.running:
                log.info("MCP server %s: closing the least recently used instance (%s)", key[0], connection.workspace)
            self._closing.add(asyncio.get_running_loop().create_task(connection.reset()))

    def _start_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep(), name="mcp-idle-sweeper")

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, min(60.0, self.idle_seconds / 4)))
            await self.close_idle()

    async def close_idle(self) -> None:
        """Close every instance not used for idle_seconds."""
        now = time.monotonic()
        for key, connection in list(self._instances.items()):
            if connection.busy or now - connection.last_used < self.idle_seconds:
                continue
            if self._instances.get(key) is connection:
                del self._instances[key]
            connection.retired = True
            if connection.running:
                log.info("MCP server %s: closing an idle instance (%s)", key[0], connection.workspace)
            with contextlib.suppress(Exception):
                await connection.reset()

    async def _list(self, name: str, workspace: str | None) -> list[ToolDef]:
        """A server's tools: asked of a running instance of this workspace, else the kept listing,
        else asked of a new instance."""
        config = self.configs[name]
        instance = self._instances.get(self._key(name, workspace))
        if instance is None or not instance.running:
            kept = self._listed.get(name)
            if kept is not None and config.command is not None:
                return kept
        connection = self.connection(name, workspace)
        tools = await asyncio.wait_for(connection.list_tools(), config.list_timeout_seconds)
        self._listed[name] = tools
        return tools

    async def list_all(self, workspace: str | None = None) -> tuple[list[ToolDef], dict[str, str]]:
        """Tools of every server that answers in time; why each other one did not."""
        names = list(self.configs)
        outcomes = await asyncio.gather(*(self._list(n, workspace) for n in names), return_exceptions=True)
        tools: list[ToolDef] = []
        unavailable: dict[str, str] = {}
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                from activities.mcp_connection import reason

                why = "no answer in time" if isinstance(outcome, TimeoutError) else reason(outcome)
                log.warning("MCP server %s: tools unavailable: %s", name, why)
                unavailable[f"MCP server {name}"] = _bounded(why)
            else:
                tools.extend(outcome)
        return tools, unavailable

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sweeper
            self._sweeper = None
        instances, self._instances = list(self._instances.values()), OrderedDict()
        await asyncio.gather(*self._closing, return_exceptions=True)
        self._closing.clear()
        for connection in instances:
            connection.retired = True
            with contextlib.suppress(Exception):
                await connection.reset()
