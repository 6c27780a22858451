"""A workspace's files as content-defined chunks, and the manifest that lists them (pure, no I/O).

A workspace is saved as chunks named by their SHA-256, so a save stores only the chunks the store
does not hold yet. Cut at fixed offsets, a file whose first line grew would shift every later
chunk; cut where the content says (after a line whose CRC-32 falls below a threshold), the cuts
after an edit land where they were, and a one-line edit in a big file makes one or two new chunks.
The threshold grows with the line's length, so chunks average TARGET_BYTES whatever the lines'
length; MIN_BYTES and MAX_BYTES bound them, and data without line ends is cut every MAX_BYTES.
zlib.crc32 is the same in every process (Python's `hash` is salted per process).

The manifest maps each relative path to a file (mode, size, chunk digests), a symbolic link (its
target text) or a directory (mode); workspace_manifest stores it. `parse_manifest` checks what a
restore will trust: every path relative, normalised, inside the workspace.
"""

from __future__ import annotations

import itertools
import operator
import posixpath
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

MIN_BYTES = 16 * 1024
TARGET_BYTES = 64 * 1024
MAX_BYTES = 256 * 1024
_PROBE_BYTES = 16 * 1024  # lines hashed per step past MIN_BYTES: most chunks end within a few steps
_SEED = 0x6A09E667  # crc32's start value: an empty line does not hash to 0 (a cut at every blank line)
_PER_BYTE = (1 << 32) // (TARGET_BYTES - MIN_BYTES)  # a line of n bytes ends a chunk with odds (n+1)/48 KiB
MANIFEST_VERSION = 1
_DIGEST = re.compile(r"[0-9a-f]{64}")


def chunk_end(data: bytes, start: int) -> int:
    """Where the chunk that starts at `start` ends: after the first line that ends at least MIN_BYTES
    on whose CRC-32 says so, else after the last line end before MAX_BYTES, else at MAX_BYTES."""
    size = len(data)
    if size - start <= MIN_BYTES:
        return size
    limit = min(size, start + MAX_BYTES)
    line_start = data.rfind(b"\n", start, start + MIN_BYTES - 1) + 1 or start
    while line_start < limit:
        probe_end = data.rfind(b"\n", line_start, min(limit, line_start + _PROBE_BYTES))
        if probe_end < 0:  # a line longer than a probe: take it whole
            probe_end = data.find(b"\n", line_start, limit)
            if probe_end < 0:
                break
        lines = data[line_start:probe_end].split(b"\n")  # each one ended by a newline
        # crc < _PER_BYTE * (len + 1), as crc // _PER_BYTE <= len: one map fewer per line
        scaled = map(_PER_BYTE.__rfloordiv__, map(zlib.crc32, lines, itertools.repeat(_SEED)))
        cut = next(itertools.compress(itertools.count(), map(operator.le, scaled, map(len, lines))), None)
        if cut is not None:
            return line_start + sum(map(len, lines[: cut + 1])) + cut + 1
        line_start = probe_end + 1
    if limit == size:
        return size
    last_line_end = data.rfind(b"\n", start + MIN_BYTES - 1, limit)
    return last_line_end + 1 if last_line_end >= 0 else limit


def iter_chunks(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks of the bytes `pieces` add up to (a file read piece by piece); the same cuts as
    one piece would give, since a cut depends on at most MAX_BYTES after the chunk's start."""
    buffer = b""
    for piece in pieces:
        buffer += piece
        start = 0
        while len(buffer) - start > MAX_BYTES:
            end = chunk_end(buffer, start)
            yield buffer[start:end]
            start = end
        buffer = buffer[start:]
    start = 0
    while start < len(buffer):
        end = chunk_end(buffer, start)
        yield buffer[start:end]
        start = end


def split_chunks(data: bytes) -> list[bytes]:
    return list(iter_chunks([data]))


class ManifestError(ValueError):
    """A manifest a restore must not follow: a path that leaves the workspace, or a malformed entry."""


@dataclass(frozen=True)
class FileEntry:
    mode: int
    size: int
    chunks: tuple[str, ...]


@dataclass
class Manifest:
    """Relative POSIX paths to files, link targets and directories (every directory, with its mode)."""

    files: dict[str, FileEntry] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(entry.size for entry in self.files.values())

    def chunk_digests(self) -> set[str]:
        return {digest for entry in self.files.values() for digest in entry.chunks}


def check_path(path: Any) -> str:
    """A path a restore may create: relative, normalised, no `..`, no NUL."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ManifestError(f"manifest path {path!r} is empty or holds a NUL")
    if path.startswith("/") or posixpath.normpath(path) != path or path == ".":
        raise ManifestError(f"manifest path {path!r} is absolute or not normalised")
    if ".." in path.split("/"):
        raise ManifestError(f"manifest path {path!r} leaves the workspace")
    return path


def _mode(value: Any, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 0o777:
        raise ManifestError(f"manifest entry {path!r} has mode {value!r}")
    return value


def _file(path: str, raw: Any) -> FileEntry:
    if not isinstance(raw, dict):
        raise ManifestError(f"manifest file {path!r} is not an object")
    size, chunks = raw.get("size"), raw.get("chunks")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ManifestError(f"manifest file {path!r} has size {size!r}")
    if not isinstance(chunks, list) or not all(isinstance(d, str) and _DIGEST.fullmatch(d) for d in chunks):
        raise ManifestError(f"manifest file {path!r} lists chunks that are not sha256 digests")
    return FileEntry(_mode(raw.get("mode"), path), size, tuple(chunks))


def _mapping(document: dict[str, Any], key: str) -> dict[str, Any]:
    value = document.get(key, {})
    if not isinstance(value, dict):
        raise ManifestError(f"manifest {key!r} is not an object")
    return value


def parse_manifest(document: Any) -> Manifest:
    """The manifest of a save, every path checked; ManifestError for anything a restore must refuse."""
    if not isinstance(document, dict) or document.get("version") != MANIFEST_VERSION:
        raise ManifestError(f"not a version {MANIFEST_VERSION} workspace manifest")
    manifest = Manifest(
        files={check_path(p): _file(p, raw) for p, raw in _mapping(document, "files").items()},
        links={check_path(p): t for p, t in _mapping(document, "links").items()},
        dirs={check_path(p): _mode(m, p) for p, m in _mapping(document, "dirs").items()},
    )
    for path, target in manifest.links.items():
        if not isinstance(target, str) or not target or "\x00" in target:
            raise ManifestError(f"manifest link {path!r} has target {target!r}")
    leaves = manifest.files.keys() | manifest.links.keys()
    if len(leaves) != len(manifest.files) + len(manifest.links) or leaves & manifest.dirs.keys():
        raise ManifestError("manifest names one path twice")
    for path in itertools.chain(leaves, manifest.dirs):
        for parent in parents_of(path):
            if parent in leaves:
                raise ManifestError(f"manifest path {path!r} lies below the file or link {parent!r}")
    return manifest


def parents_of(path: str) -> Iterator[str]:
    """`a`, `a/b` for `a/b/c`."""
    parts = path.split("/")
    for end in range(1, len(parts)):
        yield "/".join(parts[:end])
