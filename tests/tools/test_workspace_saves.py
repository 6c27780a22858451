"""Workspaces saved to the payload store and restored on another host: the same tree comes back, an
edit stores only what changed, and a restore never writes outside the workspace."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import stat
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from activities import workspace_scan
from activities.workspace_saves import WorkspaceSaves
from config.settings import Settings
from maintenance.payload_gc import collect_payloads
from payload_store import blob_tree
from payload_store.workspace_chunks import (
    ManifestError,
)
from payload_store.workspace_store import CHUNKS, LocalWorkspaceStore, get_manifest
from tests.support.s3_support import S3Server

HOUR_AGO = time.time() - 3600


def tree(root: Path) -> dict[str, Any]:
    """Every entry below root, links not followed: path -> (kind, mode, bytes or target)."""
    found: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            relative = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                found[relative] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[relative] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                found[relative] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
    return found


def text_lines(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = [f"word{i}" for i in range(3000)]
    return [f"{i}: " + " ".join(rng.choices(words, k=rng.randint(0, 12))) + "\n" for i in range(count)]


def store_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "host-a" / "conv-1"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "main.py").write_text("".join(text_lines(3000)))
    (ws / "src" / "empty-dir").mkdir()
    (ws / "run.sh").write_text("#!/bin/sh\necho hello\n")
    os.chmod(ws / "run.sh", 0o750)
    (ws / "secret.txt").write_text("only mine\n")
    os.chmod(ws / "secret.txt", 0o600)
    (ws / "blob.bin").write_bytes(random.Random(3).randbytes(600_000))
    (ws / "empty.txt").write_bytes(b"")
    os.symlink("src/pkg/main.py", ws / "main-link")
    os.symlink("/etc/hostname", ws / "outside-link")  # saved as a link, never read through
    os.symlink("nowhere", ws / "dangling")
    return ws


def saves_in(store: Path, **options: Any) -> WorkspaceSaves:
    return WorkspaceSaves(LocalWorkspaceStore(store), **options)


async def test_a_restore_into_a_new_host_gives_the_same_files_modes_links_and_dirs(
    workspace: Path, tmp_path: Path
) -> None:
    saves = saves_in(tmp_path / "store")
    assert await saves.last_save("conv-1") is None
    assert await saves.restore("conv-1", tmp_path / "nothing") is None
    saved = await saves.save("conv-1", workspace)
    assert saved.manifest and saved.skipped is None and saved.files == 5
    assert saved.total_bytes == sum(
        p.stat().st_size for p in workspace.rglob("*") if p.is_file() and not p.is_symlink()
    )
    assert await saves.last_save("conv-1") == saved

    new_host = tmp_path / "host-b" / "conversations" / "conv-1"  # not there yet
    restored = await saves_in(tmp_path / "store").restore("conv-1", new_host)
    assert restored is not None
    assert (restored.manifest, restored.files, restored.total_bytes) == (saved.manifest, 5, saved.total_bytes)
    assert restored.written_bytes == saved.total_bytes
    assert tree(new_host) == tree(workspace)
    again = await saves.restore("conv-1", new_host)  # already equal: nothing written
    assert again is not None and again.written_bytes == 0


async def test_a_one_line_edit_in_a_5_mib_file_stores_a_small_fraction(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = text_lines(90_000)
    big = "".join(lines).encode()
    assert 4.5 * 2**20 < len(big) < 6 * 2**20
    (ws / "big.txt").write_bytes(big)
    for k in range(40):
        (ws / f"notes-{k}.md").write_text(f"note {k}\n" * 50)
    saves = saves_in(tmp_path / "store")
    first = await saves.save("ws", ws)
    assert first.written_bytes >= len(big)

    lines[45_000] = "an edited line in the middle\n"
    (ws / "big.txt").write_text("".join(lines))
    second = await saves.save("ws", ws)
    assert second.manifest != first.manifest
    assert second.written_bytes < 0.05 * len(big), second.written_bytes
    assert store_bytes(tmp_path / "store" / CHUNKS) < len(big) + 0.05 * len(big)

    restored = await saves.restore("ws", tmp_path / "other")
    assert restored is not None and tree(tmp_path / "other") == tree(ws)


async def test_a_save_of_an_unchanged_workspace_reads_no_file(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in workspace.rglob("*"):
        if not path.is_symlink():
            os.utime(path, (HOUR_AGO, HOUR_AGO))  # written before this save, as most files are
    saves = saves_in(tmp_path / "store")
    first = await saves.save("conv-1", workspace)
    chunked: list[bytes] = []
    real = workspace_scan.iter_chunks

    def counted(pieces: Iterable[bytes]) -> Iterator[bytes]:
        chunked.append(b"")
        return real(pieces)

    monkeypatch.setattr(workspace_scan, "iter_chunks", counted)
    second = await saves.save("conv-1", workspace)
    assert (second.manifest, second.written_bytes, chunked) == (first.manifest, 0, [])
    (workspace / "run.sh").write_text("#!/bin/sh\necho changed\n")
    third = await saves.save("conv-1", workspace)
    assert len(chunked) == 1 and third.manifest != first.manifest


async def test_excluded_names_and_paths_are_neither_saved_nor_removed(workspace: Path, tmp_path: Path) -> None:
    for where in ("node_modules/pkg", "src/node_modules/dep", ".git/objects/ab", ".git/refs", "src/.venv/bin"):
        (workspace / where).mkdir(parents=True)
        (workspace / where / "file").write_text(f"in {where}\n")
    saves = saves_in(tmp_path / "store", exclude=("node_modules", ".venv", ".git/objects"))
    saved = await saves.save("conv-1", workspace)
    manifest = await get_manifest(saves.store, saved.manifest)
    assert not [p for p in [*manifest.files, *manifest.dirs] if "node_modules" in p or ".venv" in p]
    assert ".git/refs/file" in manifest.files and not any(p.startswith(".git/objects") for p in manifest.dirs)

    other = tmp_path / "other"
    (other / "node_modules" / "local").mkdir(parents=True)
    (other / "node_modules" / "local" / "kept.js").write_text("kept\n")
    await saves.restore("conv-1", other)
    assert (other / "node_modules" / "local" / "kept.js").read_text() == "kept\n"
    assert not (other / "src" / "node_modules").exists() and (other / ".git" / "refs" / "file").exists()


async def test_a_workspace_over_the_limit_is_not_saved_and_says_why(workspace: Path, tmp_path: Path) -> None:
    saves = saves_in(tmp_path / "store", max_bytes=100_000)
    saved = await saves.save("conv-1", workspace)
    assert saved.manifest == "" and saved.written_bytes == 0
    assert saved.skipped is not None and "over WORKSPACE_SAVE_MAX_BYTES (97.7 KiB): not saved" in saved.skipped
    assert saved.skipped.startswith("the workspace holds 755.9 KiB, over")
    assert not (tmp_path / "store").exists() and await saves.last_save("conv-1") is None


async def test_an_unreadable_file_is_left_out_with_a_reason(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open

    def refusing(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "secret.txt":
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(workspace_scan.os, "open", refusing)
    saved = await saves_in(tmp_path / "store").save("conv-1", workspace)
    monkeypatch.undo()
    assert saved.manifest and saved.files == 4
    assert saved.skipped == "saved without 1 unreadable entries: secret.txt (Permission denied)"


async def test_a_missing_workspace_is_not_saved_over_the_last_save(workspace: Path, tmp_path: Path) -> None:
    saves = saves_in(tmp_path / "store")
    saved = await saves.save("conv-1", workspace)
    missing = await saves.save("conv-1", tmp_path / "not-here")
    assert missing.manifest == "" and missing.skipped is not None and "no workspace" in missing.skipped
    assert await saves.last_save("conv-1") == saved
    with pytest.raises(ValueError, match="safe path segment"):
        await saves.save("../conv-1", workspace)


async def test_a_restore_removes_what_the_save_does_not_hold(workspace: Path, tmp_path: Path) -> None:
    saves = saves_in(tmp_path / "store")
    await saves.save("conv-1", workspace)
    other = tmp_path / "other"
    (other / "src" / "pkg").mkdir(parents=True)
    (other / "src" / "pkg" / "stale.py").write_text("stale\n")
    (other / "old-dir" / "deep").mkdir(parents=True)
    (other / "run.sh").mkdir()  # a directory where the save has a file
    (other / "main-link").write_text("a file where the save has a link\n")
    os.symlink("elsewhere", other / "dangling")  # a link to another target
    restored = await saves.restore("conv-1", other)
    assert restored is not None
    assert tree(other) == tree(workspace)


def malicious(document_paths: dict[str, list[str]]) -> dict[str, Any]:
    chunk = blob_tree.digest_of(b"x\n")
    return {
        "version": 1,
        "files": {p: {"mode": 0o644, "size": 2, "chunks": [chunk]} for p in document_paths.get("files", [])},
        "links": {p: "target" for p in document_paths.get("links", [])},
        "dirs": {p: 0o755 for p in document_paths.get("dirs", [])},
    }


@pytest.mark.parametrize(
    "paths",
    [
        {"files": ["../x"]},
        {"files": ["/tmp/x"]},
        {"files": ["a/../../x"]},
        {"files": ["a/./b"]},
        {"links": ["../escape"]},
        {"dirs": ["/abs"]},
        {"files": ["a", "a/b"]},  # below a file
        {"links": ["l"], "files": ["l/x"]},  # below a link
    ],
)
async def test_a_manifest_with_a_path_that_leaves_the_workspace_is_refused(
    paths: dict[str, list[str]], tmp_path: Path
) -> None:
    store = LocalWorkspaceStore(tmp_path / "store")
    await store.put_new(CHUNKS, {blob_tree.digest_of(b"x\n"): b"x\n"})
    root, parts = blob_tree.split(malicious(paths))
    await store.put_new("blobs", {**parts, blob_tree.digest_of(root): root})
    pointer = {"manifest": blob_tree.digest_of(root), "saved_at": "2025-01-01T00:00:00Z"}
    await store.write_pointer("conv-1", json.dumps(pointer).encode())
    target = tmp_path / "deep" / "ws"
    with pytest.raises(ManifestError):
        await WorkspaceSaves(store).restore("conv-1", target)
    assert not target.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["store"]


async def test_a_link_in_the_workspace_never_leads_a_restore_outside(workspace: Path, tmp_path: Path) -> None:
    saves = saves_in(tmp_path / "store")
    await saves.save("conv-1", workspace)
    outside = tmp_path / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "secret.txt").write_text("the host's own file\n")
    before = tree(outside)
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(outside, other / "src")  # the save has a directory `src`
    os.symlink(outside / "secret.txt", other / "secret.txt")  # and a file `secret.txt`
    await saves.restore("conv-1", other)
    assert tree(outside) == before
    assert tree(other) == tree(workspace)


async def test_the_collector_keeps_the_latest_save_and_drops_a_superseded_one(workspace: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    saves = saves_in(store)
    await saves.save("conv-1", workspace)
    (workspace / "run.sh").write_text("#!/bin/sh\necho only in the latest save\n")
    (workspace / "blob.bin").unlink()  # its chunks are reached by the first save only
    latest = await saves.save("conv-1", workspace)
    for path in store.rglob("*"):
        os.utime(path, (HOUR_AGO, HOUR_AGO))

    class NoWorkflows:
        async def list_workflows(self) -> AsyncIterator[Any]:
            for item in list[Any]():
                yield item

    settings = dataclasses.replace(Settings(), payload_store=str(store))
    report = await collect_payloads(NoWorkflows(), settings, retention_seconds=60)  # type: ignore[arg-type]
    assert report.deleted_files > 0 and report.deleted_bytes >= 600_000
    manifest = await get_manifest(saves.store, latest.manifest)
    assert {p.name for p in (store / CHUNKS).glob("*/*")} == manifest.chunk_digests()
    restored = await saves_in(store).restore("conv-1", tmp_path / "other")
    assert restored is not None and tree(tmp_path / "other") == tree(workspace)


async def test_saves_on_s3_restore_on_another_host(workspace: Path, tmp_path: Path, s3: S3Server) -> None:
    bucket = s3.create_bucket(f"saves-{uuid.uuid4().hex[:8]}")
    settings = dataclasses.replace(
        Settings(), payload_store=f"s3://{bucket}/approvals", s3_endpoint_url=s3.url, workspace_saves=True
    )
    saves = WorkspaceSaves.from_settings(settings)
    assert saves is not None
    first = await saves.save("conv-1", workspace)
    (workspace / "run.sh").write_text("#!/bin/sh\necho edited\n")
    second = await saves.save("conv-1", workspace)
    assert 0 < second.written_bytes < 2000 < first.written_bytes
    objects = s3.objects(bucket)
    assert "approvals/workspaces/conv-1.json" in objects
    assert any(key.startswith("approvals/cas/chunks/") for key in objects)

    other_host = WorkspaceSaves.from_settings(settings)
    assert other_host is not None
    restored = await other_host.restore("conv-1", tmp_path / "host-b" / "conv-1")
    assert restored is not None and restored.manifest == second.manifest
    assert tree(tmp_path / "host-b" / "conv-1") == tree(workspace)
    assert WorkspaceSaves.from_settings(dataclasses.replace(settings, workspace_saves=False)) is None
