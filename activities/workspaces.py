"""Where a conversation's tools work: one directory per conversation, below the worker's WORKSPACE_DIR.

A request names its workspace by key (`ToolRequest.workspace`, `ListToolsInput.workspace`): the
conversation's id, or for a subagent its parent's key, so a delegated task sees the files it was
asked about. No key means the shared directory, `WORKSPACE_DIR/shared`: conversations started
before workspaces were per conversation keep working there, and the worker moves the files they
left at the top of WORKSPACE_DIR into it once (adopt_shared_files). Nothing runs in WORKSPACE_DIR
itself: the sandbox hands a workspace to its unprivileged uid, and a uid that owned the directory
above every conversation's workspace could swap theirs for a link.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from activities.sandbox import SandboxPolicy
from config.host_identity import HOST_ID_FILE
from config.tools_section import DEFAULT_MAX_READ_BYTES
from core.tool_specs import InvalidToolCall

CONVERSATIONS_DIR = "conversations"
SHARED_DIR = "shared"
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
        return root / SHARED_DIR
    return root / CONVERSATIONS_DIR / workspace_dir_name(key)


def adopt_shared_files(root: Path) -> list[str]:
    """Move what sits at the top of WORKSPACE_DIR (the one shared workspace of earlier releases)
    into the shared directory, where conversations from before keep finding it; the names moved.
    An entry whose name is already taken there stays where it is."""
    shared = root / SHARED_DIR
    shared.mkdir(parents=True, exist_ok=True)
    moved = []
    for entry in sorted(root.iterdir()):
        if entry.name in (CONVERSATIONS_DIR, SHARED_DIR) or entry.name.startswith(HOST_ID_FILE):
            continue
        if (shared / entry.name).exists():
            continue
        entry.rename(shared / entry.name)
        moved.append(entry.name)
    return moved


def holds_workspaces(directory: Path, root: Path) -> bool:
    """Whether `directory` is WORKSPACE_DIR or above it: a tool working there reaches every workspace."""
    return root.resolve().is_relative_to(directory.resolve())


Ready = Callable[[], Awaitable[None]]  # awaited right before a tool changes anything (Workspace.ready)


async def no_wait() -> None:
    """The `ready` of a tool with no execution ledger to wait for."""


class Workspace:
    """The one directory a request's tools may touch; what they start runs under `sandbox`, and
    read_file returns at most `max_read_bytes` of a file.

    `ready` is awaited right before a tool changes anything: before it starts its process, or
    before a write in process with the sandbox off. The tool activities pass the execution
    ledger's claim there (activities/tools.py), so the claim is taken while the tool prepares
    its launch; it raises when this attempt must not run the tool."""

    def __init__(
        self,
        root: Path,
        sandbox: SandboxPolicy | None = None,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        ready: Ready = no_wait,
    ) -> None:
        self.root = root
        self.sandbox = sandbox or SandboxPolicy()
        self.max_read_bytes = max_read_bytes
        self.ready = ready

    def resolve(self, relative: str) -> Path:
        """Resolve symlinks too: a link inside the workspace must not lead out of it.

        Only a check by name, for a clear message: the tools then open the path where a link
        can reach nothing else (activities/file_tools.py), never by this result."""
        root = self.root.resolve()
        target = (root / relative).resolve()
        if target != root and not target.is_relative_to(root):
            raise InvalidToolCall(f"path {relative!r} resolves outside the workspace")
        return target
