"""A real PostgreSQL server for the tests: Debian's `postgresql` binaries, started once per session.

`initdb` and `pg_ctl` run in a temporary directory on a free port (as the `postgres` user when the
tests run as root, since PostgreSQL refuses to run as root); each test gets a database of its own.
Durability settings are off: a test server that loses data on a power cut is fine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest


def _free_port() -> int:
    from tests.support.processes import free_port  # imported late: tests.support.processes imports the conftest

    return free_port()


PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass
class PostgresServer:
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pg-tests-")))
    port: int = field(default_factory=_free_port)

    @property
    def data(self) -> Path:
        return self.root / "data"

    def start(self) -> PostgresServer:
        if not (PG_BIN / "initdb").exists():
            raise RuntimeError(f"PostgreSQL binaries not found in {PG_BIN}: apt-get install postgresql")
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self.root.chmod(0o755)
        self._run([str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N"])
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=400"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "start"])
        return self

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its URL (the code creates its schema on first use)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def restart(self, mode: str = "fast") -> None:
        """`pg_ctl restart -m MODE` (fast: sessions told and closed; immediate: killed, then crash
        recovery): the same port, options and data; returns once it takes connections again."""
        self._run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-l", str(self.log), "-w", "restart"])

    def stop(self) -> None:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(_as_postgres(command), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{command[0]} failed: {done.stderr.strip()} {log[-2000:]}")


BACKENDS = ("sqlite", "postgresql")
# On a test or module: run it once per backend (the `database` fixture, or `database_for`).
on_both_backends = pytest.mark.parametrize("database", BACKENDS, indirect=True)
# The CLI end to end, a Python process per command: on PostgreSQL it repeats the SQLite run process
# for process, through the storage layer that runs on both backends in `make test`; its PostgreSQL
# run goes with the full sizes, under `make test-scale`.
BACKENDS_POSTGRES_AT_SCALE = ("sqlite", pytest.param("postgresql", marks=pytest.mark.scale))
on_both_backends_postgres_at_scale = pytest.mark.parametrize("database", BACKENDS_POSTGRES_AT_SCALE, indirect=True)


def database_for(request: pytest.FixtureRequest, kind: str, directory: Path) -> str | Path:
    """A fresh projection location of this kind: a file in directory, or a new PostgreSQL database."""
    if kind == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres")
        return server.new_database()
    return directory / "approvals.db"
