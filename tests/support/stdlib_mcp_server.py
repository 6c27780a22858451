"""A stdio MCP server that needs nothing but the standard library: `python -m stdlib_mcp_server`.

Installed into a bare virtual environment (no pip, no SDK), it starts only if the sandbox shows the
environment, its base interpreter and that interpreter's standard library. Its tool `where` says
which interpreter and standard library it runs on and appends its `note` to `notes.txt` in its
working directory, a side effect a test can count.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOLS = [
    {
        "name": "where",
        "description": "Say which interpreter and standard library run this server; append the note to notes.txt.",
        "inputSchema": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
        "annotations": {"readOnlyHint": False},
    }
]


def where(note: str) -> str:
    with open("notes.txt", "a", encoding="utf-8") as notes:
        notes.write(note + "\n")
    return json.dumps(
        {
            "executable": sys.executable,
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "stdlib": os.path.dirname(os.__file__),
            "uid": os.getuid(),
            "note": note,
        }
    )


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one JSON-RPC message (None for a notification)."""
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        reply["result"] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stdlib-probe", "version": "1"},
        }
    elif method == "ping":
        reply["result"] = {}
    elif method == "tools/list":
        reply["result"] = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "where":
        text = where(str((params.get("arguments") or {}).get("note", "")))
        reply["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
    else:  # server/discover included: the client falls back to the initialize handshake
        reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
    return reply


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
