"""The tool activity opens what an approver supplied for a Python tool, gives it to the tool's code
alone, and keeps it out of the ledger and the read model; a value sealed for another request, or
under another key, runs nothing and says why without the value."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.ledger import Ledger
from activities.tool_sources import ToolSources
from activities.tools import ToolActivities
from config.supplied_secret import seal_all, supplied_secret_key
from config.tools_section import ToolsConfig, ToolSettings
from core.tool_run_model import ToolRequest
from storage.store import ProjectionStore
from tests.support import secret_python_tools

SECRET = "deploy-token-9c41e0"


@pytest.fixture
async def tools(tmp_path: Path) -> AsyncIterator[ToolActivities]:
    config = ToolsConfig(
        python_tools=["tests.support.secret_python_tools"],
        tools={"deploy": ToolSettings(supplied_by_approver=["token"])},
    )
    ledger, projection = Ledger(tmp_path / "ledger.db"), ProjectionStore(tmp_path / "approvals.db")
    key = supplied_secret_key(None, tmp_path)
    sources = ToolSources(config, tmp_path / "workspace")
    try:
        yield ToolActivities(tmp_path / "workspace", ledger, projection, sources, supplied_key=key)
    finally:
        await ledger.close()
        await projection.close()


async def request(tools: ToolActivities, request_id: str, sealed_for: str, key: bytes) -> ToolRequest:
    catalog = await tools.sources.catalog()
    deploy = next(tool for tool in catalog.tools if tool.name == "deploy")
    assert deploy.supplied_by_approver == ["token"] and "token" not in deploy.offered_parameters()["properties"]
    return ToolRequest(
        conversation_id="c1",
        turn_id="turn_1",
        tool_call_id=request_id,
        request_id=request_id,
        tool_name="deploy",
        arguments={"service": "billing"},
        tool=deploy,
        supplied=seal_all(key, sealed_for, {"token": SECRET}),
    )


async def test_the_tool_gets_the_value_and_nothing_it_leaves_behind_holds_it(
    tools: ToolActivities, tmp_path: Path
) -> None:
    secret_python_tools.RECEIVED.clear()
    key = supplied_secret_key(None, tmp_path)
    sent = await request(tools, "perm_c1_a", "perm_c1_a", key)
    result = await ActivityEnvironment().run(tools.run_python_tool, sent)
    assert (result.content, result.is_error) == ("deployed billing", False)
    assert secret_python_tools.RECEIVED == [{"service": "billing", "token": SECRET}]
    assert sent.arguments == {"service": "billing"}, "the request keeps the model's arguments"
    kept = b"".join(path.read_bytes() for path in tmp_path.glob("*.db*"))
    assert b"perm_c1_a" in kept and SECRET.encode() not in kept


@pytest.mark.parametrize("how", ["another request", "another key"])
async def test_a_value_that_does_not_open_runs_nothing(tools: ToolActivities, tmp_path: Path, how: str) -> None:
    secret_python_tools.RECEIVED.clear()
    key = supplied_secret_key("another deployment" if how == "another key" else None, tmp_path)
    sent = await request(tools, "perm_c1_b", "perm_c1_other" if how == "another request" else "perm_c1_b", key)
    result = await ActivityEnvironment().run(tools.run_python_tool, sent)
    assert result.is_error and "the value supplied for token does not open here" in result.content
    assert SECRET not in result.content and secret_python_tools.RECEIVED == []
