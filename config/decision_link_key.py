"""The key decision links are signed with: DECISION_LINK_SECRET, or one generated once and kept
in the data directory (readable by its owner only), so links survive a restart and every process
of one deployment that shares the directory signs and checks alike."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

KEY_FILE = "decision-link.key"


def decision_link_key(secret: str | None, data_dir: Path) -> bytes:
    if secret:
        return secret.encode()
    path = data_dir / KEY_FILE
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    fresh = secrets.token_hex(32).encode()
    # Written whole under a private name, then linked into place: a process that loses the race
    # reads the winner's key, never a half-written file.
    private = data_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(fresh)
    try:
        os.link(private, path)
    except FileExistsError:
        return path.read_bytes().strip()
    finally:
        private.unlink()
    return fresh
