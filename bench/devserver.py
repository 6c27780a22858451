"""The Temporal dev server for a bench run, on a free port.

In memory by default: the scenarios kill and restart workers, never the server, and an
in-memory store is the fastest honest floor a single machine gives. `--server-db` keeps it on
a SQLite file instead (as `make run` does).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.conftest import binary
from tests.processes import _kill, free_port, wait_for_port
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY


@dataclass
class BenchServer:
    log_file: Path
    db_file: Path | None = None
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> BenchServer:
        command = [binary("temporal"), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port)]
        command += ["--headless", "--log-level", "error"]
        if self.db_file is not None:
            command += ["--db-filename", str(self.db_file)]
        command += ["--search-attribute", f"{TURN_STATUS_KEY.name}=Keyword"]
        command += ["--search-attribute", f"{PENDING_APPROVALS_KEY.name}=Int"]
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_port(self.port)
        return self

    async def client(self) -> Client:
        """Connect once the frontend answers (the port opens before it is ready)."""
        deadline = time.monotonic() + 60
        while True:
            try:
                client = await Client.connect(self.address, data_converter=pydantic_data_converter)
                await client.count_workflows()
                return client
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    def stop(self) -> None:
        _kill(self.proc, signal.SIGTERM)
