"""Workspaces that survive their host: saved to the payload store, restored on another host.

A save walks the workspace (workspace_scan: no link followed; files whose size, mtime, ctime and
inode this process saw before are not read again), stores the chunks the store lacks and the
manifest (its changed parts only), then moves the workspace's pointer to it. The pointer moves
last: a save cut off halfway leaves the previous one in place. A restore reads the pointer and
makes the directory equal to that manifest (workspace_restore). Saves and restores of one
workspace take turns within a process. File work runs on threads, off the event loop.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from activities.workspace_restore import apply_manifest
from activities.workspace_scan import Exclusions, StatCache, read_files, scan_workspace
from config.settings import DEFAULT_SAVE_EXCLUSIONS, ConfigError, Settings
from core.hosts import WorkspaceRestored, WorkspaceSaved
from payload_store.workspace_store import (
    CHUNKS,
    WorkspaceStore,
    get_manifest,
    pointer_name,
    put_manifest,
    workspace_store,
)

STAT_CACHE = StatCache()  # one per process: every WorkspaceSaves of this process shares what it read
_TURNS: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = weakref.WeakValueDictionary()
_LISTED_PROBLEMS = 5


class WorkspaceSaves:
    def __init__(
        self,
        store: WorkspaceStore,
        exclude: Iterable[str] = DEFAULT_SAVE_EXCLUSIONS,
        max_bytes: int = 1 << 30,
    ) -> None:
        self.store = store
        self.excluded = Exclusions(exclude)
        self.max_bytes = max_bytes

    @classmethod
    def from_settings(cls, settings: Settings) -> WorkspaceSaves | None:
        """None when WORKSPACE_SAVES is off; the store is PAYLOAD_STORE's (a directory or S3)."""
        if not settings.workspace_saves:
            return None
        try:
            store = workspace_store(settings.payload_store_location, settings.s3_endpoint_url)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        return cls(store, settings.workspace_save_exclude, settings.workspace_save_max_bytes)

    async def save(self, name: str, root: Path) -> WorkspaceSaved:
        """Save the workspace `root` as `name` (a workspace directory's name). A workspace that is
        missing, too big or unreadable is not saved (`skipped` says why; the last save stays)."""
        pointer_name(name)
        async with self._turn(name):
            saved_at = datetime.now(UTC)
            key = self._cache_key(root)
            try:
                scan = await asyncio.to_thread(scan_workspace, root, self.excluded, STAT_CACHE, key)
            except OSError as err:
                return _not_saved(saved_at, f"the workspace {root} cannot be read ({err.strerror or err}): not saved")
            if scan.missing:
                return _not_saved(saved_at, f"there is no workspace at {root}: not saved")
            if scan.total_bytes > self.max_bytes:
                reason = (
                    f"the workspace holds {size_text(scan.total_bytes)}, over WORKSPACE_SAVE_MAX_BYTES"
                    f" ({size_text(self.max_bytes)}): not saved"
                )
                return _not_saved(saved_at, reason, scan.total_bytes)
            loop = asyncio.get_running_loop()
            written = 0

            def store_chunks(chunks: dict[str, bytes]) -> None:
                nonlocal written
                written += self.store.put_new_from_thread(CHUNKS, chunks, loop)

            read = await asyncio.to_thread(read_files, root, scan.to_read, store_chunks)
            for relative, seen, digests, read_at in read.remembered:  # their chunks are stored now
                STAT_CACHE.put(key, relative, seen, digests, read_at)
            manifest = scan.manifest
            manifest.files.update(read.files)
            digest, manifest_bytes = await put_manifest(self.store, manifest)
            saved = WorkspaceSaved(
                manifest=digest,
                saved_at=saved_at,
                files=len(manifest.files),
                total_bytes=manifest.total_bytes,
                written_bytes=written + manifest_bytes,
                skipped=_left_out(scan.problems + read.problems),
            )
            await self.store.write_pointer(name, saved.model_dump_json().encode())
            return saved

    async def restore(self, name: str, root: Path) -> WorkspaceRestored | None:
        """Make `root` (created if missing) equal to the last save of `name`; None: never saved.
        A manifest with a path that leaves the workspace raises ManifestError and writes nothing."""
        async with self._turn(name):
            last = await self.last_save(name)
            if last is None or not last.manifest:
                return None
            manifest = await get_manifest(self.store, last.manifest)
            loop = asyncio.get_running_loop()

            def fetch(digests: list[str]) -> dict[str, bytes]:
                return self.store.get_from_thread(CHUNKS, digests, loop)

            key = self._cache_key(root)
            applied = await asyncio.to_thread(apply_manifest, root, manifest, self.excluded, fetch, STAT_CACHE, key)
            return WorkspaceRestored(
                manifest=last.manifest,
                saved_at=last.saved_at,
                files=len(manifest.files),
                total_bytes=manifest.total_bytes,
                written_bytes=applied.written_bytes,
            )

    async def last_save(self, name: str) -> WorkspaceSaved | None:
        raw = await self.store.read_pointer(name)
        return None if raw is None else WorkspaceSaved.model_validate_json(raw)

    def _turn(self, name: str) -> asyncio.Lock:
        key = (self.store.where(), name)
        lock = _TURNS.get(key)
        if lock is None:
            lock = _TURNS[key] = asyncio.Lock()
        return lock

    def _cache_key(self, root: Path) -> str:
        """What the stat cache knows holds for one workspace and one store (whose chunks it names)."""
        return f"{self.store.where()}\0{Path(root).absolute()}"


def _not_saved(saved_at: datetime, reason: str, total_bytes: int = 0) -> WorkspaceSaved:
    return WorkspaceSaved(manifest="", saved_at=saved_at, total_bytes=total_bytes, skipped=reason)


def _left_out(problems: list[str]) -> str | None:
    """Saved, but without what could not be read: said in `skipped` (the manifest is set)."""
    if not problems:
        return None
    listed = ", ".join(problems[:_LISTED_PROBLEMS])
    more = f" and {len(problems) - _LISTED_PROBLEMS} more" if len(problems) > _LISTED_PROBLEMS else ""
    return f"saved without {len(problems)} unreadable entries: {listed}{more}"


def size_text(size: int) -> str:
    """1.2 GiB, 1 GiB, 512 KiB, 10 bytes."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit:
            return f"{size / unit:.1f}".removesuffix(".0") + f" {name}"
    return f"{size} bytes"
