"""How the worker starts a stdio MCP server: the one place a configuration becomes a process.

The server gets the variables its configuration grants on top of the MCP SDK's short safe list
(PATH, HOME, ...), never the worker's whole environment, and runs in the workspace unless the
configuration names another directory. Confinement of the process, when the worker has a tool
sandbox, is applied here too.
"""

from __future__ import annotations

from pathlib import Path

from mcp import StdioServerParameters

from activities.tool_config import McpServerConfig


def stdio_parameters(config: McpServerConfig, workspace: Path) -> StdioServerParameters:
    assert config.command is not None, "stdio_parameters is for servers with a command"
    cwd = Path(config.cwd).resolve() if config.cwd is not None else workspace.resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    # A relative program path (`.venv/bin/x`) means the worker's directory, not the server's cwd.
    command = str(Path(config.command).resolve()) if "/" in config.command else config.command
    return StdioServerParameters(command=command, args=list(config.args), env=dict(config.env), cwd=str(cwd))
