"""A worker's host is its workspace, not its container: an id kept in WORKSPACE_DIR.

A redeploy gives a container a new host name; a conversation's tools are pinned to a host and
its files live in that host's workspace, so a host named after its container would strand every
pinned conversation at every deploy. With WORKER_HOST unset, the id is read from HOST_ID_FILE in
the workspace directory, written there the first time: a recreated container on the same volume
is the same host. A workspace that already holds conversations when the file is first written
(a worker of an earlier release, which named its host by the machine) keeps the machine's name,
so what that release pinned stays where it is.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from pathlib import Path

from config.errors import ConfigError

HOST_ID_FILE = ".host-id"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def kept_host_id(workspace_dir: Path) -> str:
    """The id kept in workspace_dir, written once (atomically, first writer wins) when absent."""
    path = workspace_dir / HOST_ID_FILE
    try:
        return _checked(path.read_text().strip(), path)
    except FileNotFoundError:
        pass
    workspace_dir.mkdir(parents=True, exist_ok=True)
    earlier = any((workspace_dir / name).exists() for name in ("conversations", "shared"))
    machine = _SAFE.sub("-", socket.gethostname())[:100] or "host"
    fresh = machine if earlier else f"{machine}-{secrets.token_hex(3)}"
    draft = path.with_name(f"{HOST_ID_FILE}.{os.getpid()}.tmp")
    draft.write_text(fresh + "\n")
    try:
        os.link(draft, path)  # fails when another worker wrote it first: theirs is kept
    except FileExistsError:
        pass
    finally:
        draft.unlink(missing_ok=True)
    return _checked(path.read_text().strip(), path)


_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _checked(value: str, path: Path) -> str:
    if not _ID.match(value):
        raise ConfigError(f"{path} holds {value!r}, not a host id (letters, digits, '.', '_', '-'; at most 128)")
    return value
