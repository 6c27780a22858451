"""Where the tools come from: the built-ins, the configured Python modules and MCP servers.

The worker's list_tools activity and `starter.py tools` both ask this for the catalog.
"""

from __future__ import annotations

from pathlib import Path

from activities.mcp_elicitation import ElicitationDesk
from activities.mcp_servers import McpServers
from activities.python_tools import load_python_tools, python_tool_definition
from activities.sandbox import SandboxPolicy
from config.tools_section import ToolsConfig
from core.tool_model import ToolCatalog
from core.tool_specs import TOOL_SPECS
from workflows.delegation import DELEGATE_TOOL


class ToolSources:
    def __init__(
        self,
        config: ToolsConfig,
        workspace_dir: Path,
        sandbox: SandboxPolicy | None = None,
        desk: ElicitationDesk | None = None,
    ) -> None:
        """desk: where MCP servers' questions go (a worker's read model); None: they cannot ask."""
        # Imported once, when the worker starts: a module that cannot load stops the worker at once.
        self.python = load_python_tools(config.python_tools)
        self.mcp = McpServers(config.mcp_servers, workspace_dir, sandbox, desk=desk)

    async def catalog(self, workspace: str | None = None) -> ToolCatalog:
        """Every tool; MCP servers are asked as the instance for this workspace key would be."""
        # `delegate` runs in the workflow (a child conversation); each conversation offers it within its limits.
        tools = [*TOOL_SPECS.values(), DELEGATE_TOOL]
        tools += [python_tool_definition(module, entry) for module, entry in self.python.values()]
        mcp_tools, unavailable = await self.mcp.list_all(workspace)
        return ToolCatalog(tools=tools + mcp_tools, unavailable=unavailable)

    async def close(self) -> None:
        await self.mcp.close()
