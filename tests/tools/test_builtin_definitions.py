"""A built-in tool is one definition (core/builtin/): its spec is derived from it, a definition that
contradicts itself fails at import, and no code outside the definitions tests a tool's name."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from activities.builtin_tools import BUILTIN_TOOLS
from core.builtin.tool import PATH, BuiltinTool
from core.tool_specs import BUILTIN_CATALOG, BUILTINS, TOOL_SPECS, UNDO_TOOL, builtin_tool

ROOT = Path(__file__).resolve().parents[2]
# A person's always-allow binds to these (ToolDef.definition_hash): a change is a new tool to them.
PINNED_HASHES = {
    "list_dir": "821456e8b5baf6bf",
    "read_file": "02fa2e594d5f7eb6",
    "write_file": "2c334ee4021f9e1d",
    "run_shell": "0c47b5e58cd84854",
    "kv_set": "2c71bb07d4c86168",
    "kv_get": "6a44e1ef2f68686e",
}


async def nothing(ws: Any, kv: Any, args: dict[str, Any], beat: Any) -> str:
    return ""


def test_the_registry_is_the_one_list_every_view_reads() -> None:
    names = [tool.name for tool in BUILTINS]
    assert list(TOOL_SPECS) == names == list(BUILTIN_CATALOG.tools) == list(BUILTIN_TOOLS)
    for tool in BUILTINS:
        assert TOOL_SPECS[tool.name] is tool.spec and builtin_tool(tool.name) is tool
        assert BUILTIN_TOOLS[tool.name] is tool.run
        assert tool.spec.parameters["required"] == list(tool.arguments)
    assert builtin_tool("mcp__git__git_status") is None and builtin_tool("delegate") is None


def test_the_specs_models_were_told_about_are_unchanged() -> None:
    assert {name: TOOL_SPECS[name].definition_hash() for name in PINNED_HASHES} == PINNED_HASHES


def test_capabilities_decide_what_previews_stale_checks_undo_and_rules_do() -> None:
    by_effect = {tool.name: tool.effect for tool in BUILTINS}
    assert by_effect["write_file"] == "file_write" and by_effect["run_shell"] == "shell"
    assert [t.name for t in BUILTINS if t.stale_check] == [t.name for t in BUILTINS if t.undo] == ["write_file"]
    assert [t.name for t in BUILTINS if t.preview] == ["write_file", "run_shell"]
    assert UNDO_TOOL.writing("a.txt", "old") == {"path": "a.txt", "content": "old"}
    assert UNDO_TOOL.written({"path": "a.txt", "content": "old"}) == ("a.txt", "old")
    for tool in BUILTINS:  # the spec's shell splitting and confined paths follow from the effect
        assert (tool.spec.splitter == "shell") == (tool.effect == "shell")
        assert tool.spec.path_arguments == ([tool.main] if tool.effect.startswith("file_") else [])
        assert tool.spec.rule_argument == tool.main


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"main": "where"}, "main argument 'where' is not one of its arguments"),
        ({"content": "path"}, "a file_write names its content argument, and only a file_write does"),
        ({"effect": "file_write"}, "a file_write names its content argument"),
        ({"preview": True}, "only a file_write or a shell command has a preview"),
        ({"stale_check": True}, "a stale check or an undo needs a previewed file_write"),
        ({"effect": "file_write", "content": "path", "undo": True}, "needs a previewed file_write"),
        ({"run": lambda ws, kv, args, beat: ""}, "its run is not an async function"),
    ],
)
def test_a_definition_that_contradicts_itself_is_refused(changes: dict[str, Any], problem: str) -> None:
    fields: dict[str, Any] = {
        "name": "peek",
        "description": "d",
        "permission_type": "read",
        "arguments": {"path": PATH},
        "main": "path",
        "effect": "file_read",
        "run": nothing,
    }
    with pytest.raises(ValueError, match=f"built-in tool peek: .*{problem}"):
        BuiltinTool(**{**fields, **changes})


def test_no_code_outside_the_definitions_tests_a_built_in_tools_name() -> None:
    """Previews, the stale check, undo, rules, doors: they read capabilities. (Tests, bench scripts
    and docs may name tools as data; so may a rule's text or a probe's schema.)"""
    names = set(TOOL_SPECS)
    packages = ["activities", "workflows", "core", "config", "storage", "doors", "maintenance", "ui", "cli"]
    found = []
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.is_relative_to(ROOT / "core" / "builtin"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Compare):  # `name == "x"`, `name in ("x", "y")`
                    operands = [node.left, *node.comparators]
                    operands += [e for o in operands if isinstance(o, ast.Tuple | ast.List | ast.Set) for e in o.elts]
                elif isinstance(node, ast.Subscript):
                    operands = [node.slice]
                else:
                    continue
                if any(isinstance(o, ast.Constant) and o.value in names for o in operands):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
