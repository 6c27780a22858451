"""A streamable-HTTP MCP server for the tests, on the `mcp` SDK: `python -m tests.support.http_mcp_server PORT DIR`.

Every call is logged to DIR/calls.log (so a test counts how often a tool really ran), and the
description of `stamp` is read from DIR/description.txt at each listing (so a test can change a
tool between two turns).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import Tool, ToolAnnotations

STATE = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(".")
DEFAULT_DESCRIPTION = "Stamp a label into the log."


class ChangingServer(MCPServer):
    async def list_tools(self) -> list[Tool]:
        tools = await super().list_tools()
        path = STATE / "description.txt"
        description = path.read_text() if path.exists() else DEFAULT_DESCRIPTION
        return [
            tool.model_copy(update={"description": description}) if tool.name == "stamp" else tool for tool in tools
        ]


server = ChangingServer("test-tools")


def _log(line: str) -> None:
    with (STATE / "calls.log").open("a") as log:
        log.write(line + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def stamp(label: str) -> str:
    _log(f"stamp {label}")
    return f"stamped {label}"


@server.tool(annotations=ToolAnnotations(read_only_hint=False))
async def slow_stamp(label: str, seconds: float) -> str:
    """Stamp a label after a while."""
    _log(f"start {label}")
    await asyncio.sleep(seconds)
    _log(f"end {label}")
    return f"stamped {label} late"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """Look a key up; unknown keys are a tool error."""
    if key != "known":
        raise ToolError(f"no such key: {key}")
    return "found it"


def app_logging_authorization() -> Any:
    """The server's ASGI app, noting each Authorization header it receives (configured headers)."""
    app = server.streamable_http_app()

    async def logged(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization")
            if auth:
                with (STATE / "headers.log").open("a") as log:
                    log.write(auth.decode() + "\n")
        await app(scope, receive, send)

    return logged


if __name__ == "__main__":
    uvicorn.run(app_logging_authorization(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
