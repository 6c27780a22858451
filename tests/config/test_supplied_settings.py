"""Where supplied_by_approver is configured: a tool's own `[tools.NAME]` table (beside `[tools]`'s
limits) and an MCP server's table, by the server's tool names; a built-in tool, an unknown key or a
value that is not a list of names is refused in one line that names the file and the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.tool_sources import ToolSources
from config.settings import ConfigError, Settings
from config.tools_section import McpServerConfig, ToolsConfig, ToolSettings
from core.tool_model import ToolDef


def settings_with(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return Settings(policy_file=str(path))


def test_a_tools_table_and_a_servers_table_both_name_supplied_arguments(tmp_path: Path) -> None:
    settings = settings_with(
        tmp_path,
        """[tools]
max_read_bytes = 1000
[tools.deploy]
supplied_by_approver = ["token"]
[mcp_servers.vault]
command = "vault-mcp"
supplied_by_approver = { login = ["password", "otp"] }
""",
    )
    tools = settings.load_tools()
    assert tools.tools["deploy"].supplied_by_approver == ["token"]
    assert tools.mcp_servers["vault"].supplied_by_approver == {"login": ["password", "otp"]}
    assert settings.max_read_bytes() == 1000, "the [tools] limits are read as before"


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('[tools.write_file]\nsupplied_by_approver = ["content"]\n', "[tools.write_file] supplied_by_approver"),
        ('[tools.deploy]\nsupplied_by_aprover = ["token"]\n', "tools.deploy.supplied_by_aprover"),
        ('[tools.deploy]\nsupplied_by_approver = "token"\n', "tools.deploy.supplied_by_approver"),
        ('[tools.deploy]\nsupplied_by_approver = [""]\n', "tools.deploy.supplied_by_approver.0"),
    ],
)
def test_a_wrong_table_is_refused_in_one_line(tmp_path: Path, table: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_with(tmp_path, table).load_tools()
    assert says in str(refused.value) and "policy.toml" in str(refused.value) and "\n" not in str(refused.value)


async def test_the_catalog_applies_both_and_leaves_out_a_tool_that_names_an_argument_it_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ToolsConfig(
        python_tools=["examples.weather_tools"],
        mcp_servers={"vault": McpServerConfig(command="vault-mcp", supplied_by_approver={"login": ["password"]})},
        tools={
            "report_weather": ToolSettings(supplied_by_approver=["observation"]),
            "forecast": ToolSettings(supplied_by_approver=["x"]),
        },
    )
    sources = ToolSources(config, tmp_path)
    login = ToolDef(
        name="mcp__vault__login",
        description="log in",
        parameters={"type": "object", "properties": {"password": {"type": "string"}}},
        permission_type="write",
        source="mcp",
        origin="vault",
        remote_name="login",
    )

    async def listed(workspace: str | None) -> tuple[list[ToolDef], dict[str, str]]:
        return [login], {}

    monkeypatch.setattr(sources.mcp, "list_all", listed)  # the server's listing, without starting one
    catalog = await sources.catalog()
    by_name = {tool.name: tool for tool in catalog.tools}
    assert by_name["report_weather"].supplied_by_approver == ["observation"]
    assert by_name["mcp__vault__login"].supplied_by_approver == ["password"]
    assert "forecast" not in by_name and "does not take" in catalog.unavailable["forecast"]
    assert by_name["read_file"].supplied_by_approver == []
