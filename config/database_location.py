"""What a database setting names: a PostgreSQL server by URL, or else a SQLite file by path.

Read by the settings (to hide a SQLite file from the tool sandbox) and by the storage backends (to
open it), so both read a location the same way.
"""

from __future__ import annotations

from pathlib import Path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


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
