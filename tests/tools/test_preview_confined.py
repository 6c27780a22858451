"""A preview reads the target as the tool would, confined: a link out of the workspace shows nothing
outside it, and a write bound to a previewed hash refuses a changed file, with every launcher."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from activities.builtin_tools import Workspace
from activities.file_state import TargetChanged, write_if_unchanged
from activities.previews import preview_effect
from activities.sandbox import SandboxPolicy
from core.models import PreviewInput
from core.previews import ABSENT, content_hash

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
