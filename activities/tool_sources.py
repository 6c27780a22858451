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
from core.supplied_arguments import with_supplied
from core.tool_model import ToolCatalog, ToolDef
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
        self._config = config

    async def catalog(self, workspace: str | None = None) -> ToolCatalog:
        """Every tool; MCP servers are asked as the instance for this workspace key would be."""
        # `delegate` runs in the workflow (a child conversation); each conversation offers it within its limits.
        tools = [*TOOL_SPECS.values(), DELEGATE_TOOL]
        tools += [python_tool_definition(module, entry) for module, entry in self.python.values()]
        mcp_tools, unavailable = await self.mcp.list_all(workspace)
        offered, left_out = with_supplied(tools + mcp_tools, self._supplied_by_approver(mcp_tools))
        return ToolCatalog(tools=offered, unavailable=unavailable | left_out)

    def _supplied_by_approver(self, mcp_tools: list[ToolDef]) -> dict[str, list[str]]:
        """Tool name -> the arguments a person supplies: its [tools.NAME] table, and for an MCP
        tool its server's `supplied_by_approver` (keyed by the server's own tool names)."""
        wanted = {name: list(table.supplied_by_approver) for name, table in self._config.tools.items()}
        for tool in mcp_tools:
            server = self._config.mcp_servers.get(tool.origin)
            names = server.supplied_by_approver.get(tool.remote_name or "", []) if server is not None else []
            wanted[tool.name] = wanted.get(tool.name, []) + names
        return wanted

    async def close(self) -> None:
        await self.mcp.close()
