"""What a database setting names: a PostgreSQL server by URL, or else a SQLite file by path.

Read by the settings (to hide a SQLite file from the tool sandbox) and by the storage backends (to
open it), so both read a location the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# How long an operation on a PostgreSQL server waits for it (a connection, then the answer) before
# it fails as unavailable: a restart or a quick failover fits in it; a CLI run waits no longer.
WAIT_VARIABLE = "DATABASE_WAIT_SECONDS"
DEFAULT_WAIT_SECONDS = 15.0


def is_postgres(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def sqlite_path(location: str | Path) -> Path:
    """`sqlite:///abs/path` (or `sqlite:////abs/path`), `sqlite:rel/path` or a plain path, as a path."""
    text = str(location)
    if text.startswith("sqlite://"):
        return Path("/" + text.removeprefix("sqlite://").lstrip("/"))
    if text.startswith("sqlite:"):
        return Path(text.removeprefix("sqlite:"))
    return Path(text)


def database_wait_seconds() -> float:
    """DATABASE_WAIT_SECONDS as the storage backends read it (Settings refuses a bad value with a
    clear error at start; here one falls back on the default)."""
    try:
        value = float(os.environ.get(WAIT_VARIABLE) or DEFAULT_WAIT_SECONDS)
    except ValueError:
        return DEFAULT_WAIT_SECONDS
    return value if value > 0 else DEFAULT_WAIT_SECONDS
