"""Where a conversation's tools work: one directory per conversation, below the worker's WORKSPACE_DIR.

A request names its workspace by key (`ToolRequest.workspace`, `ListToolsInput.workspace`): the
conversation's id, or for a subagent its parent's key, so a delegated task sees the files it was
asked about. No key means the shared top-level directory: conversations started before workspaces
were per conversation keep the files they already had there.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

CONVERSATIONS_DIR = "conversations"
_SAFE = re.compile(r"[^A-Za-z0-9.-]")


def workspace_dir_name(key: str) -> str:
    """One path segment for a key: the key itself when it is already safe and short, else a
    cleaned prefix plus a hash, so two keys never share a directory."""
    if _SAFE.search(key) is None and 0 < len(key) <= 128 and key not in (".", ".."):
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{_SAFE.sub('-', key)[:64].strip('.')}-{digest}"


def workspace_for(root: Path, key: str | None) -> Path:
    """The directory a request's tools may touch (not created here)."""
    if not key:
        return root
    return root / CONVERSATIONS_DIR / workspace_dir_name(key)
