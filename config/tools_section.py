"""The tool sources of the configuration file: Python tool modules and MCP servers, and each
tool's own `[tools.NAME]` table.

They live in the same TOML file as the permission rules (POLICY_FILE):

    python_tools = ["examples.weather_tools"]
    [mcp_servers.git]
    command = "mcp-server-git"
    args = ["--repository", "data/workspace"]
    network = false          # stdio servers run in the tool sandbox; true lets this one reach the network
    readonly = ["/opt/tools"] # more paths it may read (node, npx and uvx installations are found by themselves)
    [mcp_servers.search]
    url = "http://127.0.0.1:9000/mcp"
    headers = { Authorization = "Bearer ..." }
    supplied_by_approver = { login = ["password"] }  # by the server's tool names
    [tools.deploy]           # one tool's own table, by the name the model and the rules use
    supplied_by_approver = ["token"]
"""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from core.wire_model import WireModel

# The most read_file returns of one file unless [tools] max_read_bytes (or TOOL_MAX_READ_BYTES) says otherwise.
DEFAULT_MAX_READ_BYTES = 4 * 1024 * 1024


class McpServerConfig(WireModel):
    model_config = ConfigDict(extra="forbid")

    command: str | None = Field(default=None, description="stdio: the program the worker starts")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, description="stdio: variables passed into its sandbox")
    cwd: str | None = Field(default=None, description="stdio: where it runs, read-write (default: the workspace)")
    network: bool = Field(default=False, description="stdio: reach the network from its sandbox (default: none)")
    readonly: list[str] = Field(
        default_factory=list, description="stdio: more paths it may read in its sandbox (an installation, a cache)"
    )
    url: str | None = Field(default=None, description="streamable HTTP: the endpoint")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=120.0, gt=0, description="longest one call may take")
    list_timeout_seconds: float = Field(default=15.0, gt=0, description="longest listing its tools may take")
    elicitation: bool = Field(default=True, description="let it ask people mid-call (elicitation) through the inbox")
    elicitation_timeout_seconds: float | None = Field(
        default=None, gt=0, description="how long a question waits before it is declined (default: 3/4 of timeout)"
    )
    rule_arguments: dict[str, str] = Field(
        default_factory=dict, description="tool -> the argument rules glob over (default: its first required string)"
    )
    supplied_by_approver: dict[str, list[str]] = Field(
        default_factory=dict,
        description="tool -> arguments a person supplies when approving (a secret): never offered to the model",
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of command (stdio) or url (streamable HTTP)")
        if self.elicitation_timeout_seconds is not None and self.elicitation_timeout_seconds >= self.timeout_seconds:
            raise ValueError("elicitation_timeout_seconds must be shorter than timeout_seconds (the call waits for it)")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


class ToolSettings(WireModel):
    """One tool's own table, `[tools.NAME]` (NAME as the model and the rules know the tool)."""

    model_config = ConfigDict(extra="forbid")

    supplied_by_approver: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=list, description="arguments a person supplies when approving a call (a secret)"
    )


class ToolsConfig(WireModel):
    """The tool part of the configuration file; the rest of the file is the policy."""

    python_tools: list[str] = Field(default_factory=list, description="modules that declare @tool functions")
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    tools: dict[str, ToolSettings] = Field(default_factory=dict, description="[tools.NAME] tables, by tool name")
