"""What a workspace holds, walked the way a save reads it: below directory handles, no link followed.

A command a tool started may still run while its workspace is saved, and may swap a directory for
a link: every directory and file is opened relative to its parent's handle with O_NOFOLLOW, so a
save never reads what lies outside the workspace. A link is saved as a link (its target's text).

A save of an unchanged workspace should read nothing: `StatCache` remembers each file's chunk
digests by its size, mtime, ctime and inode, and a file that matches is not opened. A file whose
mtime is within RACY_NS of the moment it was read is not remembered (a second write in the same
clock tick would keep its mtime): it is read again by the next save. These functions block: run
them on a thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from payload_store.workspace_chunks import FileEntry, Manifest, iter_chunks

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO swapped in must not block
RACY_NS = 2_000_000_000  # a filesystem with one-second timestamps: two writes within a second, one mtime
READ_PIECE = 8 * 2**20
FLUSH_BYTES = 16 * 2**20  # chunks read are handed to the store in batches about this big
MAX_DEPTH = 256
Signature = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
Sink = Callable[[dict[str, bytes]], None]  # stores a batch of chunks (digest -> bytes)


class Exclusions:
    """WORKSPACE_SAVE_EXCLUDE: a bare name (`.venv`) at any depth; a path with a slash (`.git/objects`)
    as that path from the workspace's top."""

    def __init__(self, entries: Iterable[str]) -> None:
        cleaned = [posixpath.normpath(e.strip().strip("/")) for e in entries if e.strip().strip("/")]
        self.names = frozenset(e for e in cleaned if "/" not in e)
        self.paths = frozenset(e for e in cleaned if "/" in e)

    def __call__(self, relative: str, name: str) -> bool:
        return name in self.names or relative in self.paths


def signature(st: os.stat_result) -> Signature:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class StatCache:
    """(workspace, relative path) -> (signature, chunk digests), for this process."""

    def __init__(self, limit: int = 1_000_000) -> None:
        self._entries: dict[tuple[str, str], tuple[Signature, tuple[str, ...]]] = {}
        self._limit = limit

    def get(self, workspace: str, relative: str, seen: Signature) -> tuple[str, ...] | None:
        found = self._entries.get((workspace, relative))
        return found[1] if found is not None and found[0] == seen else None

    def put(self, workspace: str, relative: str, seen: Signature, digests: tuple[str, ...], read_at_ns: int) -> None:
        if seen[1] >= read_at_ns - RACY_NS:
            self._entries.pop((workspace, relative), None)
            return
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[(workspace, relative)] = (seen, digests)


@dataclass
class Scan:
    """The walk's result: what the cache already knew, and the files to read (path -> mode)."""

    manifest: Manifest = field(default_factory=Manifest)
    to_read: dict[str, int] = field(default_factory=dict)
    total_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    missing: bool = False  # no workspace directory at all


def scan_workspace(root: Path, excluded: Exclusions, cache: StatCache, cache_key: str) -> Scan:
    scan = Scan()
    try:
        top = os.open(root, DIR_FLAGS)
    except FileNotFoundError:
        scan.missing = True
        return scan
    try:
        _walk(top, "", 0, scan, excluded, cache, cache_key)
    finally:
        os.close(top)
    return scan


def _walk(fd: int, prefix: str, depth: int, scan: Scan, excluded: Exclusions, cache: StatCache, key: str) -> None:
    with os.scandir(fd) as listing:
        entries = sorted(listing, key=lambda entry: entry.name)
    for entry in entries:
        relative = prefix + entry.name
        if excluded(relative, entry.name):
            continue
        try:
            relative.encode()
        except UnicodeEncodeError:
            scan.problems.append(f"{relative.encode(errors='replace').decode()} (a name that is not UTF-8)")
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(entry.name, dir_fd=fd)
                target.encode()  # a target that is not UTF-8 cannot go in the manifest
                scan.manifest.links[relative] = target
            elif stat.S_ISDIR(st.st_mode):
                if depth >= MAX_DEPTH:
                    scan.problems.append(f"{relative} (deeper than {MAX_DEPTH} directories)")
                    continue
                below = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                try:
                    _walk(below, relative + "/", depth + 1, scan, excluded, cache, key)
                finally:
                    os.close(below)
                scan.manifest.dirs[relative] = stat.S_IMODE(st.st_mode) & 0o777
            elif stat.S_ISREG(st.st_mode):
                scan.total_bytes += st.st_size
                mode = stat.S_IMODE(st.st_mode) & 0o777
                known = cache.get(key, relative, signature(st))
                if known is None:
                    scan.to_read[relative] = mode
                else:
                    scan.manifest.files[relative] = FileEntry(mode, st.st_size, known)
            # a socket, a FIFO or a device holds nothing a save could restore: left out
        except OSError as err:
            scan.problems.append(f"{relative} ({err.strerror or err})")
        except UnicodeEncodeError:
            scan.problems.append(f"{relative} (a link target that is not UTF-8)")


@dataclass
class ReadFiles:
    """Files read and chunked; their chunks went to the sink; cache entries to keep once stored."""

    files: dict[str, FileEntry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    remembered: list[tuple[str, Signature, tuple[str, ...], int]] = field(default_factory=list)


def read_files(root: Path, wanted: dict[str, int], sink: Sink) -> ReadFiles:
    """Read each wanted file (path -> mode from the walk), cut it into chunks, hand the chunks to
    `sink` in batches; an unreadable file is a problem, not an error."""
    out = ReadFiles()
    batch = _Batch(sink)
    with DirHandles(root) as parents:
        for relative, mode in wanted.items():
            try:
                entry, seen, read_at = _read_one(parents, relative, mode, batch)
            except OSError as err:
                out.problems.append(f"{relative} ({err.strerror or err})")
                continue
            out.files[relative] = entry
            out.remembered.append((relative, seen, entry.chunks, read_at))
    batch.flush()
    return out


class _Batch:
    """Chunks waiting for the sink: handed over every FLUSH_BYTES, so a big file never sits whole in memory."""

    def __init__(self, sink: Sink) -> None:
        self._sink, self._blobs, self._bytes = sink, dict[str, bytes](), 0

    def add(self, digest: str, chunk: bytes) -> None:
        self._blobs[digest] = chunk
        self._bytes += len(chunk)
        if self._bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self._blobs:
            self._sink(self._blobs)
        self._blobs, self._bytes = {}, 0


def _read_one(parents: DirHandles, relative: str, mode: int, batch: _Batch) -> tuple[FileEntry, Signature, int]:
    parent, _, name = relative.rpartition("/")
    fd = os.open(name, FILE_FLAGS, dir_fd=parents.open(parent))
    try:
        read_at = time.time_ns()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"no longer a regular file ({stat.filemode(st.st_mode)})")
        digests, size = [], 0
        for chunk in iter_chunks(_pieces(fd)):
            digest = hashlib.sha256(chunk).hexdigest()
            digests.append(digest)
            batch.add(digest, chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return FileEntry(mode, size, tuple(digests)), signature(st), read_at


def _pieces(fd: int) -> Iterator[bytes]:
    while piece := os.read(fd, READ_PIECE):
        yield piece


class DirHandles:
    """Directory handles by relative path, each opened below its parent's with O_NOFOLLOW (a link or
    a file where a directory should be is an error, never followed); `create` makes what is missing.
    The last few stay open: files come in walk order, so siblings share their parent's handle."""

    def __init__(self, root: Path, keep: int = 32) -> None:
        self._root = root
        self._open: dict[str, int] = {}
        self._keep = keep

    def __enter__(self) -> DirHandles:
        self._open[""] = os.open(self._root, DIR_FLAGS)
        return self

    def __exit__(self, *_: object) -> None:
        for fd in self._open.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._open.clear()

    def open(self, relative: str, create: bool = False) -> int:
        found = self._open.get(relative)
        if found is not None:
            return found
        parent, _, name = relative.rpartition("/")
        parent_fd = self.open(parent, create)
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            os.mkdir(name, 0o755, dir_fd=parent_fd)
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        if len(self._open) > self._keep:  # close some that are not above this one (the caller holds none)
            for stale in [k for k in self._open if k and not relative.startswith(k + "/")][: self._keep // 2]:
                os.close(self._open.pop(stale))
        self._open[relative] = fd
        return fd
