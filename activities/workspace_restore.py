"""A workspace made equal to a save: on a new host (no directory yet) or over what a host left.

Whatever the workspace holds may have been placed by a tool's command, so nothing is followed: each
directory is opened below its parent's handle with O_NOFOLLOW, a file is written to a new name in
its directory and renamed over the old (a rename replaces a link, never writes through it), and a
link, a file or a directory where the save has something else is removed first. Paths come from a
checked manifest (parse_manifest: relative, normalised). Files the save does not hold are removed,
except what WORKSPACE_SAVE_EXCLUDE names, which a save never holds. These functions block: run them
on a thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from activities.workspace_scan import DIR_FLAGS, FILE_FLAGS, MAX_DEPTH, DirHandles, Exclusions, StatCache, signature
from payload_store.workspace_chunks import FileEntry, Manifest, ManifestError, iter_chunks, parents_of

Fetch = Callable[[list[str]], dict[str, bytes]]  # chunk digests -> their bytes, from the store
FETCH_BYTES = 16 * 2**20  # small files' chunks are fetched together, about this many bytes at a time
_GROUP = 64  # a big file's chunks are fetched this many at a time
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Applied:
    written_bytes: int = 0
    removed: int = 0


def apply_manifest(
    root: Path, manifest: Manifest, excluded: Exclusions, fetch: Fetch, cache: StatCache, cache_key: str
) -> Applied:
    root.mkdir(parents=True, exist_ok=True)
    needed = set(manifest.dirs)
    for path in itertools.chain(manifest.files, manifest.links, manifest.dirs):
        needed.update(parents_of(path))
    out = Applied()
    with DirHandles(root) as dirs:
        _prune(dirs.open(""), "", 0, manifest, needed, excluded, out)
        for path in sorted(needed):
            dirs.open(path, create=True)
        stale = [p for p, entry in sorted(manifest.files.items()) if not _same(dirs, p, entry, cache, cache_key)]
        for batch in _batches(stale, manifest.files):
            small = [manifest.files[p] for p in batch if manifest.files[p].size <= FETCH_BYTES]
            fetched = fetch(sorted({digest for entry in small for digest in entry.chunks}))
            for path in batch:
                _write(dirs, path, manifest.files[path], _file_bytes(manifest.files[path], fetched, fetch))
                out.written_bytes += manifest.files[path].size
        for path, target in sorted(manifest.links.items()):
            parent, _, name = path.rpartition("/")
            try:
                os.symlink(target, name, dir_fd=dirs.open(parent))
            except FileExistsError:  # prune kept it when it was the same link
                if os.readlink(name, dir_fd=dirs.open(parent)) != target:
                    raise
        for path, mode in sorted(manifest.dirs.items(), reverse=True):  # the deepest first: a 0o555 one last
            os.fchmod(dirs.open(path), mode)
    return out


def _prune(
    fd: int, prefix: str, depth: int, manifest: Manifest, needed: set[str], excluded: Exclusions, out: Applied
) -> None:
    """Remove what the save does not hold, or holds as another kind (a link where it has a file)."""
    with os.scandir(fd) as listing:
        entries = list(listing)
    for entry in entries:
        relative = prefix + entry.name
        if excluded(relative, entry.name):
            continue
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            if relative in needed and depth < MAX_DEPTH:
                below = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                try:
                    if not st.st_mode & stat.S_IWUSR:  # a read-only directory of an earlier restore
                        os.fchmod(below, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
                    _prune(below, relative + "/", depth + 1, manifest, needed, excluded, out)
                finally:
                    os.close(below)
                continue
            shutil.rmtree(entry.name, dir_fd=fd)
        elif stat.S_ISLNK(st.st_mode):
            if manifest.links.get(relative) == os.readlink(entry.name, dir_fd=fd):
                continue
            os.unlink(entry.name, dir_fd=fd)
        elif stat.S_ISREG(st.st_mode) and relative in manifest.files:
            continue
        else:
            os.unlink(entry.name, dir_fd=fd)
        out.removed += 1


def _same(dirs: DirHandles, path: str, entry: FileEntry, cache: StatCache, cache_key: str) -> bool:
    """Whether the file there already holds the save's bytes (its mode is set right if not)."""
    parent, _, name = path.rpartition("/")
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dirs.open(parent))
    except FileNotFoundError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry.size:
            return False
        digests = cache.get(cache_key, path, signature(st))
        if digests is None:
            read_at = time.time_ns()
            pieces = iter(lambda: os.read(fd, 8 * 2**20), b"")
            digests = tuple(hashlib.sha256(chunk).hexdigest() for chunk in iter_chunks(pieces))
            cache.put(cache_key, path, signature(st), digests, read_at)
        if digests != entry.chunks:
            return False
        if stat.S_IMODE(st.st_mode) != entry.mode:
            os.fchmod(fd, entry.mode)
        return True
    finally:
        os.close(fd)


def _batches(paths: list[str], files: dict[str, FileEntry]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for path in paths:
        if batch and size + files[path].size > FETCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += files[path].size
    if batch:
        yield batch


def _file_bytes(entry: FileEntry, fetched: dict[str, bytes], fetch: Fetch) -> Iterator[bytes]:
    """The file's chunks in order: from the batch fetched, else (a big file) fetched a group at a time."""
    for start in range(0, len(entry.chunks), _GROUP):
        group = entry.chunks[start : start + _GROUP]
        wanted = sorted({digest for digest in group if digest not in fetched})
        more = fetch(wanted) if wanted else {}
        for digest in group:
            yield fetched[digest] if digest in fetched else more[digest]


def _write(dirs: DirHandles, path: str, entry: FileEntry, chunks: Iterator[bytes]) -> None:
    """Write to a new name in the file's directory, then rename it over the file: atomic, never through a link."""
    parent, _, name = path.rpartition("/")
    parent_fd = dirs.open(parent)
    temporary = f".restoring.{secrets.token_hex(8)}"
    fd = os.open(temporary, _NEW_FILE, 0o600, dir_fd=parent_fd)
    try:
        with open(fd, "wb", closefd=False) as out:
            written = sum(out.write(chunk) for chunk in chunks)
        if written != entry.size:
            raise ManifestError(f"the saved chunks of {path!r} hold {written} bytes, the manifest says {entry.size}")
        os.fchmod(fd, entry.mode)
        os.close(fd)
        fd = -1
        os.replace(temporary, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=parent_fd)
        raise
