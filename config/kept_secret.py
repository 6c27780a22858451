"""A secret generated once and kept in the data directory, readable by its owner only, so every
process of a deployment that shares the directory reads the same one, across restarts."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def kept_secret(data_dir: Path, name: str, make: Callable[[], str]) -> str:
    """The text of `data_dir/name`, written first with `make()` when there is none.

    Written whole under a private name, then linked into place: a process that loses the race to
    write it reads the winner's secret, never a half-written file."""
    path = data_dir / name
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    fresh = make()
    private = data_dir / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(fresh)
    try:
        os.link(private, path)
    except FileExistsError:
        return path.read_text().strip()
    finally:
        private.unlink()
    return fresh
