"""Open a path below a directory without following any link: the file tools' way in when the
user turned the sandbox off.

Every component is opened relative to the directory handle of the one before it, with
O_NOFOLLOW, so a symlink anywhere on the path (planted or flipped by a command meanwhile) makes
the open fail instead of leading out of the workspace. The path is opened once; size and type
are read from the open handle. These functions block: callers run them on a thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Called with each handle the walk opens (the root, each directory, the file): raises to refuse it.
Check = Callable[[int], None]


class LinkRefused(OSError):
    """A component of the path is a symbolic link (or not a directory where one is needed)."""


@dataclass(frozen=True)
class ReadOutcome:
    size: int  # the file's size when it was opened
    data: bytes | None  # None: over the limit, nothing was read
    kind: str = "file"  # "file", "directory" or "other" (a device, a FIFO, a socket)


def _parts(relative: str) -> list[str]:
    """The path's components; lexical `..` handling is safe because no link is ever followed."""
    normal = os.path.normpath(relative)
    parts = [p for p in PurePosixPath(normal).parts if p not in ("", ".")]
    if PurePosixPath(normal).is_absolute() or (parts and parts[0] == ".."):
        raise LinkRefused(f"{relative!r} is not below the workspace")
    return parts


def _open_dir(parent: int, name: str, relative: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise LinkRefused(
                f"{relative}: {name} is a symbolic link or not a directory (links are not followed)"
            ) from None
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=parent)
    return _open_dir(parent, name, relative, create=False)


def _walk(root: Path, parts: list[str], relative: str, create: bool, check: Check | None = None) -> int:
    """A handle on the directory that holds the last component (the root for an empty path)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        if check is not None:
            check(fd)
        for name in parts:
            nxt = _open_dir(fd, name, relative, create)
            os.close(fd)
            fd = nxt
            if check is not None:
                check(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_last(root: Path, relative: str, flags: int, create_parents: bool = False, check: Check | None = None) -> int:
    parts = _parts(relative)
    if not parts:
        return os.open(root, _DIR_FLAGS)
    parent = _walk(root, parts[:-1], relative, create_parents, check)
    try:
        fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent)
    except OSError as err:
        if err.errno == errno.ELOOP:  # the last component is a link
            raise LinkRefused(f"{relative} is a symbolic link (links are not followed)") from None
        raise
    finally:
        os.close(parent)
    if check is not None:
        try:
            check(fd)
        except BaseException:
            os.close(fd)
            raise
    return fd


def read_beneath(root: Path, relative: str, limit: int, check: Check | None = None) -> ReadOutcome:
    """At most `limit` bytes of a regular file; nothing is read when it is bigger. `check` sees
    every handle on the way (the root's, each directory's, the file's) and may refuse it."""
    # O_NONBLOCK: a FIFO must not hang the open; a regular file ignores it.
    fd = _open_last(root, relative, os.O_RDONLY | os.O_NONBLOCK, check=check)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return ReadOutcome(info.st_size, None, "directory")
        if not stat.S_ISREG(info.st_mode):
            return ReadOutcome(info.st_size, None, "other")
        if info.st_size > limit:
            return ReadOutcome(info.st_size, None)
        chunks, left = [], limit + 1  # one byte more: a file that grew since fstat is caught
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return ReadOutcome(max(info.st_size, len(data)), None if len(data) > limit else data)
    finally:
        os.close(fd)


def write_beneath(root: Path, relative: str, data: bytes) -> None:
    """Create or replace a regular file, making its parent directories (never through a link)."""
    fd = _open_last(root, relative, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, create_parents=True)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LinkRefused(f"{relative} is not a regular file")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def list_beneath(root: Path, relative: str) -> list[str] | None:
    """The names in a directory, directories marked with `/`; None when it is not a directory."""
    try:
        fd = _walk(root, _parts(relative), relative, create=False)
    except LinkRefused:
        return None
    try:
        with os.scandir(fd) as entries:
            return sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries)
    finally:
        os.close(fd)
