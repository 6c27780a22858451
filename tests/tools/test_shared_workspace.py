"""The shared directory of conversations from before per-conversation workspaces: their files are
moved into WORKSPACE_DIR/shared once, and nothing runs in WORKSPACE_DIR itself, so a root worker's
sandbox never hands the directory above every workspace to its unprivileged uid."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.builtin_tools import KvStore
from activities.mcp_servers import McpServers
from activities.sandbox import SandboxPolicy
from activities.workspaces import CONVERSATIONS_DIR, SHARED_DIR, Workspace, adopt_shared_files, workspace_for
from config.tools_section import McpServerConfig
from core.builtin.run_shell import run as run_shell
from core.builtin.write_file import run as write_file


def test_files_left_at_the_top_move_into_the_shared_directory_once(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("old")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1")
    (tmp_path / CONVERSATIONS_DIR / "c1").mkdir(parents=True)
    (tmp_path / SHARED_DIR).mkdir()
    (tmp_path / SHARED_DIR / "kept.txt").write_text("there already")
    (tmp_path / "kept.txt").write_text("same name at the top")

    assert adopt_shared_files(tmp_path) == ["notes.txt", "src"]
    assert (tmp_path / SHARED_DIR / "notes.txt").read_text() == "old"
    assert (tmp_path / SHARED_DIR / "src" / "a.py").read_text() == "x = 1"
    assert (tmp_path / SHARED_DIR / "kept.txt").read_text() == "there already"
    assert (tmp_path / "kept.txt").exists(), "a name taken in the shared directory is left where it was"
    assert (tmp_path / CONVERSATIONS_DIR / "c1").is_dir()
    assert adopt_shared_files(tmp_path) == []
    assert workspace_for(tmp_path, None) == tmp_path / SHARED_DIR


@pytest.mark.parametrize("launcher", ["bwrap", "unshare"])
async def test_an_older_conversation_and_a_new_one_both_run_their_tools(tmp_path: Path, launcher: str) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    policy = SandboxPolicy(launcher=launcher)
    older = Workspace(workspace_for(root, None), policy)
    newer = Workspace(workspace_for(root, "conv-1"), policy)
    for ws in (older, newer):
        ws.root.mkdir(parents=True, exist_ok=True)
    kv = KvStore({})
    assert (await run_shell(older, kv, {"command": "echo older > o.txt"}, lambda: None)).startswith("exit code 0")
    # The shared directory was handed to the sandbox; the workspace root above the new one was not.
    result = await run_shell(newer, kv, {"command": "echo newer > n.txt; cat n.txt"}, lambda: None)
    assert result.startswith("exit code 0") and "newer" in result, result
    assert await write_file(newer, kv, {"path": "w.txt", "content": "w"}, lambda: None) == "Wrote 1 bytes to w.txt"
    assert (root / SHARED_DIR / "o.txt").read_text().strip() == "older"
    assert (workspace_for(root, "conv-1") / "w.txt").read_text() == "w"
    assert root.stat().st_uid == 0 or root.stat().st_uid == Path(tmp_path).stat().st_uid


def test_an_mcp_server_cannot_be_set_to_work_in_the_directory_above_every_workspace(tmp_path: Path) -> None:
    for cwd in (tmp_path, tmp_path.parent):
        config = McpServerConfig(command="mcp-server-git", cwd=str(cwd))
        with pytest.raises(ValueError, match="holds WORKSPACE_DIR"):
            McpServers({"git": config}, tmp_path)
    McpServers({"git": McpServerConfig(command="mcp-server-git", cwd=str(tmp_path / "elsewhere"))}, tmp_path / "w")
