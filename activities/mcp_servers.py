"""MCP servers as the worker holds them: started on demand, reused, restarted after a failure.

Each configured server has one connection, kept open by an owner task (the SDK's transports must
be entered and left in one task) and shared by every call. A call or listing that fails drops the
connection; the next one starts the server again. `close()` stops them all with the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import mcp_types
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from activities.builtin_tools import truncate
from activities.heartbeat import heartbeating
from activities.mcp_launch import stdio_parameters
from activities.sandbox import SandboxPolicy
from activities.tool_config import McpServerConfig
from workflows.models import PermissionType, ToolDef, ToolResult

log = logging.getLogger(__name__)
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
OPEN_TIMEOUT_SECONDS = 30.0


def mcp_tool_name(server: str, tool: str) -> str:
    """How an MCP tool reaches the model and the rules: mcp__SERVER__TOOL, in the characters
    function names may use."""
    return f"mcp__{_UNSAFE_NAME.sub('_', server)}__{_UNSAFE_NAME.sub('_', tool)}"[:64]


def _errlog() -> TextIO:
    """The server's stderr goes to the worker's (its log); a captured stream without a file
    descriptor cannot be handed to a child process."""
    try:
        sys.stderr.fileno()
        return sys.stderr
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr


def _rule_argument(schema: dict[str, Any], configured: str | None) -> str | None:
    if configured is not None:
        return configured
    properties = schema.get("properties") or {}
    for field in schema.get("required") or []:
        if (properties.get(field) or {}).get("type") == "string":
            return str(field)
    return None


def _reason(err: BaseException) -> str:
    """The innermost error of the SDK's task-group wrappers, which say nothing on their own."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return f"{type(err).__name__}: {err}"


def tool_definition(server: str, config: McpServerConfig, tool: mcp_types.Tool) -> ToolDef:
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    permission: PermissionType = "read" if read_only else ("network" if hints and hints.open_world_hint else "write")
    schema = dict(tool.input_schema or {"type": "object"})
    schema.setdefault("type", "object")
    annotations = hints.model_dump(by_alias=True, exclude_none=True) if hints else {}
    return ToolDef(
        name=mcp_tool_name(server, tool.name),
        description=tool.description or tool.title or tool.name,
        parameters=schema,
        permission_type=permission,
        rule_argument=_rule_argument(schema, config.rule_arguments.get(tool.name)),
        source="mcp",
        origin=server,
        remote_name=tool.name,
        annotations=annotations,
        # Annotations never loosen a rule; they only spare a read-only tool the at-most-once guard.
        at_most_once=not read_only,
    )


def result_text(result: mcp_types.CallToolResult) -> ToolResult:
    """Text and structured content kept; other content summarised."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content not shown]")
    structured = result.structured_content
    # A plain function's return value comes twice (as text and as {"result": text}): keep one.
    if structured is not None and structured != {"result": "\n".join(parts)}:
        parts.append(json.dumps(structured, sort_keys=True))
    text = "\n".join(parts) or "(no content)"
    if result.is_error:
        return ToolResult(content=truncate(f"Error from the tool: {text}"), is_error=True)
    return ToolResult(content=truncate(text))


class McpConnection:
    def __init__(self, name: str, config: McpServerConfig, workspace: Path, sandbox: SandboxPolicy) -> None:
        self.name = name
        self.config = config
        self._workspace = workspace
        self._sandbox = sandbox
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    def _new_client(self) -> Client:
        if self.config.command is not None:
            transport: Any = stdio_client(
                stdio_parameters(self.config, self._workspace, self._sandbox), errlog=_errlog()
            )
        else:
            assert self.config.url is not None
            http = create_mcp_http_client(headers=dict(self.config.headers))
            transport = streamable_http_client(self.config.url, http_client=http)
        return Client(transport, cache=None, read_timeout_seconds=self.config.timeout_seconds)

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        try:
            async with self._new_client() as client:
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

    async def client(self) -> Client:
        async with self._lock:
            if self._client is None or self._owner is None or self._owner.done():
                self._stop = asyncio.Event()
                ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
                self._owner = asyncio.create_task(self._own(ready), name=f"mcp-{self.name}")
                try:
                    self._client = await asyncio.wait_for(asyncio.shield(ready), OPEN_TIMEOUT_SECONDS)
                except BaseException:
                    await self._drop()
                    if ready.done() and not ready.cancelled():
                        ready.exception()  # seen: the caller raises its own error
                    raise
                log.info("MCP server %s: connected (%s)", self.name, self.config.transport)
            return self._client

    async def _drop(self) -> None:
        """End the owner task: a connected one leaves its context (stopping a stdio server), one
        still connecting is canceled; either way it is awaited, so nothing is left half-closed."""
        connected, self._client = self._client is not None, None
        owner, self._owner = self._owner, None
        self._stop.set()
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

    async def call(self, tool: ToolDef, arguments: dict[str, Any], beat: Callable[[], None]) -> ToolResult:
        """One tools/call; a broken connection is dropped and the error raised, so Temporal retries."""
        try:
            client = await self.client()
            result = await heartbeating(
                client.call_tool(
                    tool.remote_name or tool.name, arguments, read_timeout_seconds=self.config.timeout_seconds
                ),
                beat,
            )
        except BaseException:
            await self.reset()
            raise
        return result_text(result)


class McpServers:
    """Every configured server by name; stdio ones start in `sandbox` (the worker's tool sandbox)."""

    def __init__(
        self, configs: dict[str, McpServerConfig], workspace: Path, sandbox: SandboxPolicy | None = None
    ) -> None:
        sandbox = SandboxPolicy() if sandbox is None else sandbox
        self.connections = {name: McpConnection(name, c, workspace, sandbox) for name, c in configs.items()}

    async def list_all(self) -> tuple[list[ToolDef], dict[str, str]]:
        """Tools of every server that answers in time; why each other one did not."""

        async def one(connection: McpConnection) -> list[ToolDef]:
            return await asyncio.wait_for(connection.list_tools(), connection.config.list_timeout_seconds)

        names = list(self.connections)
        outcomes = await asyncio.gather(*(one(self.connections[n]) for n in names), return_exceptions=True)
        tools: list[ToolDef] = []
        unavailable: dict[str, str] = {}
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                why = "no answer in time" if isinstance(outcome, TimeoutError) else _reason(outcome)
                log.warning("MCP server %s: tools unavailable: %s", name, why)
                unavailable[f"MCP server {name}"] = why[:300]
            else:
                tools.extend(outcome)
        return tools, unavailable

    async def close(self) -> None:
        for connection in self.connections.values():
            with contextlib.suppress(Exception):
                await connection.reset()
