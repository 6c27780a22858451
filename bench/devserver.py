"""The Temporal dev server for a bench run, on a free port.

In memory by default: the scenarios kill and restart workers, never the server, and an
in-memory store is the fastest honest floor a single machine gives. `--server-db` keeps it on
a SQLite file instead (as `make run` does).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.processes import DevServer

BenchServer = DevServer


def bench_server(log_file: Path, db_file: Path | None = None) -> DevServer:
    return DevServer(db_file, log_file)
