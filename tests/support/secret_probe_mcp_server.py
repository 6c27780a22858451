"""A stdio MCP server for the supplied-argument tests: `python secret_probe_mcp_server.py`, started by
the worker in the tool sandbox, in the conversation's workspace.

Its tool `login(user, password)` records what it received in `received.json` in its working
directory: the user, and the password's SHA-256 (the plain value would itself be a copy of the
secret on disk, which a workspace save would carry into the payload store). It answers without
the password, as a careful tool does.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer

RECEIVED = "received.json"
server = MCPServer("secret-probe")


@server.tool()
def login(user: str, password: str) -> str:
    """Log in to the vault as a user, with a password only a person knows."""
    seen = {"user": user, "password_sha256": hashlib.sha256(password.encode()).hexdigest()}
    Path(RECEIVED).write_text(json.dumps(seen))
    return f"logged in as {user}"


if __name__ == "__main__":
    server.run()
