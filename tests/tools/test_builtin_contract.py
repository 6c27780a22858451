"""A built-in tool's spec and implementation are checked together: the real pair passes, a drift fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import activities.builtin_tools as builtin_tools
from activities.builtin_contract import BuiltinToolMismatch, arguments_read, check_builtin_tools
from core.tool_specs import TOOL_SPECS

ROOT = Path(__file__).resolve().parents[2]


def test_the_real_specs_and_implementations_agree() -> None:
    check_builtin_tools(TOOL_SPECS, builtin_tools.BUILTIN_TOOLS)
    assert set(TOOL_SPECS) == set(builtin_tools.BUILTIN_TOOLS)
    for name, function in builtin_tools.BUILTIN_TOOLS.items():
        assert arguments_read(function) == set(TOOL_SPECS[name].parameters["required"])


def test_a_spec_without_an_implementation_is_named() -> None:
    implementations = {k: v for k, v in builtin_tools.BUILTIN_TOOLS.items() if k != "kv_get"}
    with pytest.raises(BuiltinToolMismatch, match=r"specified but not implemented: kv_get$"):
        check_builtin_tools(TOOL_SPECS, implementations)


def test_an_implementation_without_a_spec_is_named() -> None:
    specs = {k: v for k, v in TOOL_SPECS.items() if k not in ("run_shell", "list_dir")}
    with pytest.raises(BuiltinToolMismatch, match=r"implemented but not specified: list_dir, run_shell$"):
        check_builtin_tools(specs, builtin_tools.BUILTIN_TOOLS)


async def reads_a_key_the_spec_lacks(ws: Any, kv: Any, args: dict[str, Any], beat: Any) -> str:
    return str(args["key"]) + str(args.get("default"))


async def reads_nothing(ws: Any, kv: Any, args: dict[str, Any], beat: Any) -> str:
    return ""


def not_async(ws: Any, kv: Any, args: dict[str, Any], beat: Any) -> str:
    return args["key"]  # type: ignore[no-any-return]


async def three_parameters(ws: Any, args: dict[str, Any], beat: Any) -> str:
    return args["key"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("implementation", "message"),
    [
        (reads_a_key_the_spec_lacks, r"kv_get: the spec requires \['key'\] but .* reads \['default', 'key'\]"),
        (reads_nothing, r"kv_get: the spec requires \['key'\] but .* reads \[\]"),
        (not_async, r"kv_get: the implementation not_async is not an async function"),
        (three_parameters, r"kv_get: three_parameters takes \(ws, args, beat\)"),
    ],
)
def test_an_implementation_whose_arguments_differ_from_its_spec_is_named(implementation: Any, message: str) -> None:
    implementations = {**builtin_tools.BUILTIN_TOOLS, "kv_get": implementation}
    with pytest.raises(BuiltinToolMismatch, match=message):
        check_builtin_tools(TOOL_SPECS, implementations)


def test_the_check_runs_when_the_implementations_are_imported() -> None:
    """A fresh interpreter whose specs lack kv_set cannot import the implementations."""
    doctored = (
        "import core.tool_specs as specs\n"
        "specs.TOOL_SPECS = {k: v for k, v in specs.TOOL_SPECS.items() if k != 'kv_set'}\n"
        "import activities.builtin_tools\n"
    )
    done = subprocess.run([sys.executable, "-c", doctored], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode != 0
    assert "BuiltinToolMismatch" in done.stderr
    assert "implemented but not specified: kv_set" in done.stderr
