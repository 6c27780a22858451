"""How the worker starts a stdio MCP server: the one place a configuration becomes a process.

The server gets the variables its configuration grants on top of the MCP SDK's short safe list
(PATH, HOME, ...), never the worker's whole environment, and runs in the workspace unless the
configuration names another directory. Confinement of the process, when the worker has a tool
sandbox, is applied here too.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import StdioServerParameters

from activities.tool_config import McpServerConfig


def stdio_parameters(config: McpServerConfig, workspace: Path) -> StdioServerParameters:
    assert config.command is not None, "stdio_parameters is for servers with a command"
    cwd = Path(config.cwd).resolve() if config.cwd is not None else workspace.resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    return StdioServerParameters(
        command=_program(config.command), args=list(config.args), env=dict(config.env), cwd=str(cwd)
    )


def _program(command: str) -> str:
    """A relative path (`.venv/bin/x`) is the worker's, not the server's cwd; a bare name installed
    beside the worker's interpreter (a server from PyPI) is found without an activated venv."""
    if "/" in command:
        return str(Path(command).resolve())
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else command
