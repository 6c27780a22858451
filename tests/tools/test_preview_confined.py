"""A preview reads the target as the tool would, confined: a link out of the workspace shows nothing
outside it, and a write bound to a previewed hash refuses a changed file, with every launcher. A
plain file is read in the worker's process, and only what a sandboxed tool would see the same."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import pytest

from activities.builtin_tools import Workspace
from activities.file_state import TargetChanged, write_if_unchanged
from activities.previews import preview_effect, read_as_the_tool_sees
from activities.sandbox import SandboxPolicy
from core.previews import ABSENT, content_hash
from core.tool_run_model import PreviewInput

SECRET = "outside-secret-marker"
LAUNCHERS = ["bwrap", "unshare", "off"]


def workspace(tmp_path: Path, launcher: str) -> Workspace:
    root = tmp_path / "workspace"
    root.mkdir()
    policy = SandboxPolicy(enabled=launcher != "off", launcher="auto" if launcher == "off" else launcher)
    return Workspace(root, policy)


def preview(ws: Workspace, path: str, content: str = "new\n"):  # type: ignore[no-untyped-def]
    request = PreviewInput(
        conversation_id="c", request_id="r", tool_name="write_file", arguments={"path": path, "content": content}
    )
    return asyncio.run(preview_effect(ws, request, lambda: None))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_link_to_outside_the_workspace_is_previewed_without_reading_outside(tmp_path: Path, launcher: str) -> None:
    ws = workspace(tmp_path, launcher)
    outside = tmp_path / "outside.txt"
    outside.write_text(f"{SECRET}\n")
    (ws.root / "link.txt").symlink_to(outside)
    (ws.root / "etc-link").symlink_to("/etc/hostname")
    for path in ("link.txt", "etc-link"):
        shown = preview(ws, path)
        assert SECRET not in shown.model_dump_json()
        assert shown.target_hash != content_hash(outside.read_bytes())
        assert shown.target_hash != content_hash(Path("/etc/hostname").read_bytes())
    assert outside.read_text() == f"{SECRET}\n"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_write_bound_to_a_preview_refuses_a_changed_file(tmp_path: Path, launcher: str) -> None:
    ws = workspace(tmp_path, launcher)
    (ws.root / "a.txt").write_text("one\n")
    seen = preview(ws, "a.txt", "two\n")
    assert seen.target_hash == content_hash(b"one\n") and seen.diff is not None and "-one\n+two\n" in seen.diff
    (ws.root / "a.txt").write_text("changed\n")
    with pytest.raises(TargetChanged) as changed:
        asyncio.run(write_if_unchanged(ws, "a.txt", b"two\n", seen.target_hash, lambda: None))
    assert changed.value.now_hash == content_hash(b"changed\n")
    assert (ws.root / "a.txt").read_text() == "changed\n"
    written = asyncio.run(write_if_unchanged(ws, "a.txt", b"two\n", content_hash(b"changed\n"), lambda: None))
    assert (ws.root / "a.txt").read_text() == "two\n"
    assert written.previous == b"changed\n", "what the write replaced, for an undo"
    assert preview(ws, "b.txt").target_hash == ABSENT
    asyncio.run(write_if_unchanged(ws, "sub/b.txt", b"x", ABSENT, lambda: None))
    assert (ws.root / "sub" / "b.txt").read_bytes() == b"x"


def test_a_binary_or_too_large_file_is_named_not_shown(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "bwrap")
    (ws.root / "bin").write_bytes(b"\x00\x01secret")
    assert preview(ws, "bin").note == "binary file: no diff shown"
    big = ws.root / "big.txt"
    big.write_bytes(b"x" * (ws.max_read_bytes + 10))
    shown = preview(ws, "big.txt")
    assert shown.diff is None and shown.note is not None and "too large" in shown.note
    assert shown.target_hash == content_hash(big.read_bytes())


@pytest.mark.parametrize("launcher", ["bwrap", "unshare"])
def test_a_plain_file_is_read_in_process_and_anything_else_in_the_sandbox(tmp_path: Path, launcher: str) -> None:
    """The in-process read takes only what the sandbox would show the same; the rest is left to it."""
    ws = workspace(tmp_path, launcher)
    (ws.root / "sub").mkdir()
    (ws.root / "sub" / "a.txt").write_text("one\n")
    (ws.root / "secret.env").write_text(f"{SECRET}\n")
    (ws.root / "link.txt").symlink_to(ws.root / "sub" / "a.txt")  # a link, even one inside: the sandbox's
    preview(ws, "sub/a.txt")  # the sandbox's first launch hands the workspace to its uid, as a tool's would
    here = read_as_the_tool_sees(ws, "sub/a.txt")
    assert here is not None and here.data == b"one\n" and here.target_hash == content_hash(b"one\n")
    missing = read_as_the_tool_sees(ws, "sub/none.txt")
    assert missing is not None and missing.target_hash == ABSENT
    for path in ("link.txt", "sub/../sub/a.txt", "sub"):
        assert read_as_the_tool_sees(ws, path) is None, path
    hidden = Workspace(ws.root, replace(ws.sandbox, hidden=(ws.root / "secret.env",)))
    assert read_as_the_tool_sees(hidden, "secret.env") is None
    assert SECRET not in preview(hidden, "secret.env").model_dump_json()
    if os.geteuid() == 0:  # a file the sandbox uid may not read is not read by the worker's root either
        (ws.root / "sub" / "root.txt").write_text(f"{SECRET}\n")
        (ws.root / "sub" / "root.txt").chmod(0o600)
        assert read_as_the_tool_sees(ws, "sub/root.txt") is None
        assert SECRET not in preview(ws, "sub/root.txt").model_dump_json()
    assert preview(ws, "sub/a.txt", "two\n").diff == "--- a/sub/a.txt\n+++ b/sub/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
