"""The built-in tools and the checks before them, without Temporal."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from activities.builtin_tools import BUILTIN_TOOLS, MAX_RESULT_CHARS, KvStore, Workspace, truncate
from core.tool_arguments import validate_call
from core.tool_specs import BUILTIN_CATALOG, InvalidToolCall, confined_path


def run(name: str, ws: Workspace, args: dict, kv: KvStore | None = None) -> str:  # type: ignore[type-arg]
    async def call() -> str:
        return await BUILTIN_TOOLS[name](ws, kv or KvStore({}), args, lambda: None)

    return asyncio.run(call())


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc/passwd", "~/x", "", "a\x00b"])
def test_paths_that_leave_the_workspace_are_refused(path: str) -> None:
    with pytest.raises(InvalidToolCall):
        confined_path(path)


def test_inner_paths_are_normalised() -> None:
    assert confined_path("./a/b/../c.txt") == "a/c.txt"
    _, args = validate_call(BUILTIN_CATALOG, "write_file", '{"path": "dir/./f.txt", "content": "x"}')
    assert args["path"] == "dir/f.txt"


def test_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(InvalidToolCall, match="outside the workspace"):
        run("read_file", Workspace(root), {"path": "link/secret.txt"})


def test_file_tools_round_trip(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert run("write_file", ws, {"path": "d/f.txt", "content": "héllo"}) == "Wrote 6 bytes to d/f.txt"
    assert run("read_file", ws, {"path": "d/f.txt"}) == "héllo"
    assert run("list_dir", ws, {"path": "."}) == "d/"
    assert run("read_file", ws, {"path": "nope.txt"}).startswith("Error:")


def test_shell_output_and_exit_code(tmp_path: Path) -> None:
    assert run("run_shell", Workspace(tmp_path), {"command": "echo hi; exit 3"}) == "exit code 3\nhi\n"


def test_huge_output_is_truncated_with_a_marker() -> None:
    text = truncate("x" * (MAX_RESULT_CHARS + 10))
    assert text.startswith("x" * MAX_RESULT_CHARS)
    assert text.endswith("[... truncated: 10 more characters not shown ...]")
    assert truncate("short") == "short"


def test_kv_accepts_json_and_refuses_the_rest() -> None:
    kv = KvStore({"a": 1})
    kv.set("b", {"list": [1, "two", None]})
    assert kv.values == {"a": 1, "b": {"list": [1, "two", None]}} and kv.changed
    with pytest.raises(ValueError, match="not JSON"):
        kv.set("c", {1, 2})
    with pytest.raises(ValueError, match="not JSON"):
        kv.set("d", float("nan"))
    assert "c" not in kv.values and "d" not in kv.values


def test_shell_timeout_kills_the_whole_process_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("core.builtin.run_shell.SHELL_TIMEOUT_SECONDS", 0.5)
    result = run("run_shell", Workspace(tmp_path), {"command": "(sleep 2; echo late > late.txt) & wait"})
    assert "ran longer than 0.5 seconds" in result
    time.sleep(2.5)  # past the moment the child would have written
    assert not (tmp_path / "late.txt").exists(), "the background child was killed with its shell"
