"""The key decision links are signed with: DECISION_LINK_SECRET, or one generated once and kept
in the data directory (readable by its owner only), so links survive a restart and every process
of one deployment that shares the directory signs and checks alike."""

from __future__ import annotations

import secrets
from pathlib import Path

from config.kept_secret import kept_secret

KEY_FILE = "decision-link.key"


def decision_link_key(secret: str | None, data_dir: Path) -> bytes:
    if secret:
        return secret.encode()
    return kept_secret(data_dir, KEY_FILE, lambda: secrets.token_hex(32)).encode()
