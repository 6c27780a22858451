"""Scenario `faults`: what each fault beyond the process leaves behind once it ends.

Every fault of the fault suite (tests/faults/catalogue.py) runs here with more conversations than
`make test` gives it: the model never answering, stopping half-way through a stream (closed or
silent), answering 429 with retry-after, the network to it cut and stalled (on SQLite, and once on
PostgreSQL); PostgreSQL restarted fast and immediate, the network to it cut and stalled; the read
model's, the ledger's and the payload store's disks full; the S3 payload store answering 503 and
then slowly. Per fault: seconds from the fault's end until the first decision after it reached its
tool (`seconds_to_recover`), and the counts that must be 0: `lost`, `doubled`, `stuck`
(tests/faults/outcome.py says how each is counted). One fault at a time, on the run's one dev
server and, for PostgreSQL, its one PostgreSQL server.
"""

from __future__ import annotations

import os
from typing import Any
from unittest.mock import patch

from bench.harness import Bench, say
from tests.faults.catalogue import POSTGRES_ROLES, Ground, every_fault
from tests.support.s3_support import CREDENTIALS, S3Server


async def run(bench: Bench, count: int) -> dict[str, Any]:
    s3 = S3Server().start()
    ground = Ground(bench.client, bench.postgres_server(), s3.url, bench.root / "faults")
    figures: dict[str, Any] = {}
    try:
        with patch.dict(os.environ, CREDENTIALS):  # botocore reads them there
            for name, fault in every_fault(ground, count).items():
                outcome = await fault()
                figures[name] = {"backend": outcome.backend, **outcome.figures()}
                say(f"{name}: {figures[name]}")
                for kind in ("lost", "doubled", "stuck"):
                    bench.check(f"faults.{name}.{kind}", 0, getattr(outcome, kind))
    finally:
        s3.stop()
    return {"conversations": count, "conversations_postgresql": max(count, POSTGRES_ROLES), "faults": figures}
