"""The tool registry without Temporal: JSON-schema checks, rules over tool names, Python tool schemas."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

import examples.weather_tools as weather
from activities.python_tools import PythonToolError, load_python_tools, python_tool_definition, run_python_tool
from approvals_tools import tool, tools_of
from core.policy import evaluate
from core.policy_rules import PolicyRules
from core.tool_arguments import validate_call
from core.tool_model import ToolDef
from core.tool_registry import Catalog, InvalidToolCall, main_argument_text
from core.tool_specs import TOOL_SPECS

COMMIT = ToolDef(
    name="mcp__git__git_commit",
    description="Record changes to the repository",
    parameters={
        "type": "object",
        "properties": {"repo_path": {"type": "string"}, "message": {"type": "string"}, "amend": {"type": "boolean"}},
        "required": ["repo_path", "message"],
    },
    permission_type="write",
    rule_argument="message",
    source="mcp",
    origin="git",
)
CATALOG = Catalog([*TOOL_SPECS.values(), COMMIT])


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"repo_path": 1, "message": "m"}, "'repo_path' of mcp__git__git_commit is invalid: 1 is not of type 'string'"),
        ({"repo_path": "."}, "missing required argument(s): message"),
        ({"repo_path": ".", "message": "m", "amend": "yes"}, "'amend' of mcp__git__git_commit is invalid"),
        ({"path": "x", "content": 5}, "unknown tool"),
    ],
)
def test_arguments_are_checked_against_the_json_schema(arguments: dict[str, Any], error: str) -> None:
    name = "write_file_typo" if "content" in arguments else COMMIT.name
    with pytest.raises(InvalidToolCall) as raised:
        validate_call(CATALOG, name, json.dumps(arguments))
    assert error in str(raised.value)


def test_built_in_schemas_refuse_extra_and_mistyped_arguments() -> None:
    with pytest.raises(InvalidToolCall, match="unexpected argument"):
        validate_call(CATALOG, "read_file", '{"path": "a", "mode": "rb"}')
    with pytest.raises(InvalidToolCall, match="'content' of write_file is invalid: 5 is not of type 'string'"):
        validate_call(CATALOG, "write_file", '{"path": "a", "content": 5}')
    tool_def, args = validate_call(CATALOG, COMMIT.name, '{"repo_path": ".", "message": "fix: typo"}')
    assert main_argument_text(tool_def, args) == "fix: typo"


def test_definition_hash_changes_with_description_or_schema_only() -> None:
    same = COMMIT.model_copy(update={"annotations": {"readOnlyHint": False}, "origin": "other"})
    assert same.definition_hash() == COMMIT.definition_hash()
    assert COMMIT.model_copy(update={"description": "Commit"}).definition_hash() != COMMIT.definition_hash()
    wider = {**COMMIT.parameters, "required": ["repo_path"]}
    assert COMMIT.model_copy(update={"parameters": wider}).definition_hash() != COMMIT.definition_hash()


def test_rules_glob_over_mcp_tool_names_and_an_unmatched_one_is_asked() -> None:
    rules = PolicyRules(
        allow=["mcp__git__git_status", "mcp__git__git_diff*"],
        deny=["mcp__git__git_commit(*WIP*)", "mcp__fs__*(/etc/**)"],
    )
    assert evaluate(rules, "mcp__git__git_status", "{}") == "allow"
    assert evaluate(rules, "mcp__git__git_diff_staged", "{}") == "allow"
    assert evaluate(rules, COMMIT, "fix typo") == "ask"
    # Deny beats ask beats allow, for globs too: a glob ask keeps even an allowed tool asked.
    assert evaluate(rules.model_copy(update={"ask": ["mcp__git__*"]}), "mcp__git__git_status", "{}") == "ask"
    assert evaluate(rules, COMMIT, "WIP: more", always_allow=frozenset({COMMIT.name})) == "deny"
    assert evaluate(rules, "mcp__fs__write_file", "/etc/passwd", auto_approve=True) == "deny"
    assert evaluate(rules, "mcp__other__anything", "{}") == "ask"


def test_the_policy_splits_what_the_tool_says_to_split() -> None:
    rules = PolicyRules(allow=["my_shell(ls*)"], deny=["my_shell(sudo *)"])
    shell_like = COMMIT.model_copy(update={"name": "my_shell", "splitter": "shell"})
    plain = shell_like.model_copy(update={"splitter": "none"})
    assert evaluate(rules, shell_like, "ls; sudo rm x") == "deny"
    assert evaluate(rules, plain, "ls; sudo rm x") == "allow"


def test_decorator_builds_the_schema_from_hints_and_docstring() -> None:
    by_name = {entry.name: entry for entry in tools_of(weather)}
    forecast = python_tool_definition("examples.weather_tools", by_name["forecast"])
    assert forecast.source == "python" and forecast.origin == "examples.weather_tools"
    assert forecast.permission_type == "read" and not forecast.at_most_once
    assert forecast.description.startswith("Tell the weather forecast for a city")
    assert forecast.parameters["required"] == ["city"]
    assert forecast.parameters["properties"]["days"] == {
        "type": "integer",
        "default": 1,
        "description": "how many days ahead, 1 to 7",
    }
    assert forecast.parameters["additionalProperties"] is False
    assert python_tool_definition("m", by_name["report_weather"]).at_most_once


def test_python_tools_run_with_their_own_checks_and_errors_become_results() -> None:
    entry = {e.name: e for e in tools_of(weather)}["forecast"]
    ok = asyncio.run(run_python_tool(entry, {"city": "Oslo", "days": 2}, lambda: None))
    assert ok.content == "Oslo, next 2 day(s): cold, clear skies" and not ok.is_error
    raised = asyncio.run(run_python_tool(entry, {"city": "Oslo", "days": 9}, lambda: None))
    assert raised.is_error and "days must be between 1 and 7" in raised.content


def test_a_tool_needs_hints_a_docstring_and_a_free_name() -> None:
    with pytest.raises(TypeError, match="needs a type hint"):

        @tool(permission="read")
        def untyped(x) -> str:  # type: ignore[no-untyped-def]
            """Doc."""
            return str(x)

    with pytest.raises(TypeError, match="docstring"):

        @tool(permission="read")
        def undocumented(x: int) -> str:
            return str(x)

    with pytest.raises(PythonToolError, match="cannot be imported"):
        load_python_tools(["examples.no_such_module"])


def test_the_example_configuration_loads() -> None:
    from config.settings import Settings

    settings = Settings(policy_file="examples/tools.toml")
    policy, tools = settings.load_policy(), settings.load_tools()
    assert tools.python_tools == ["examples.weather_tools"]
    assert tools.mcp_servers["git"].command == "mcp-server-git" and tools.mcp_servers["git"].transport == "stdio"
    assert evaluate(policy, "mcp__git__git_diff_staged", "{}") == "allow"
    assert evaluate(policy, "mcp__git__git_commit", "fix") == "ask"
    assert evaluate(policy, "mcp__git__git_reset", ".", auto_approve=True) == "deny"


def test_a_server_needs_exactly_one_transport(tmp_path: Any) -> None:
    from config.settings import ConfigError, Settings

    path = tmp_path / "tools.toml"
    path.write_text('[mcp_servers.x]\ncommand = "a"\nurl = "http://b"\n')
    with pytest.raises(ConfigError, match="exactly one of command"):
        Settings(policy_file=str(path)).load_tools()


def test_a_python_tool_that_runs_too_long_is_an_error_and_heartbeats_while_it_runs() -> None:
    @tool(permission="execute", timeout_seconds=0.3)
    def stuck(seconds: float) -> str:
        """Block for a while."""
        time.sleep(seconds)
        return "woke"

    beats: list[int] = []
    (entry,) = tools_of(SimpleNamespace(stuck=stuck))
    result = asyncio.run(run_python_tool(entry, {"seconds": 2}, lambda: beats.append(1)))
    assert result.is_error and "ran longer than 0.3 seconds" in result.content
    assert beats, "it heartbeats while the function runs"
