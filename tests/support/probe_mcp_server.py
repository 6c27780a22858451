"""A stdio MCP server for the sandbox tests: `python probe_mcp_server.py`, started by the worker.

On start it writes `started` in its working directory (so a test sees whether it ever ran); its
tool `reach` reports what the server can reach: an environment variable, a file and a TCP port;
`linger` starts a background process and returns at once, as a careless or hostile tool would.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("probe")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def reach(variable: str, path: str, port: int) -> str:
    """Try to read a variable, read a file and connect to a loopback port; say what happened."""
    seen: dict[str, str] = {"variable": os.environ.get(variable, "(absent)")}
    try:
        seen["file"] = Path(path).read_text()
    except OSError as err:
        seen["file"] = f"unreadable: {err.strerror}"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            seen["connect"] = conn.recv(64).decode()
    except OSError as err:
        seen["connect"] = f"failed: {err}"
    return json.dumps(seen)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def linger(seconds: str) -> str:
    """Start `sleep SECONDS` in the background and return without waiting for it."""
    shell = subprocess.run(["sh", "-c", f"sleep {seconds} >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
    return f"started {shell.stdout.strip()}"


if __name__ == "__main__":
    Path("started").write_text("yes\n")
    server.run()
