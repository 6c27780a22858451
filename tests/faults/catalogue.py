"""Every fault of the suite, by name, ready to run at a given size: the list `make test-scale`
(tests/faults/test_faults_at_scale.py) and `bench` (scenario `faults`) both go through, so a fault
added here is measured and proven at size alike. `make test` runs each fault smaller, with what
a user sees checked, in the test module of its kind."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

from tests.faults.disk_faults import Stores, run_disk_full
from tests.faults.model_faults import (
    run_model_half_stream,
    run_model_network,
    run_model_never_answers,
    run_model_rate_limited,
)
from tests.faults.outcome import FaultOutcome
from tests.faults.postgres_faults import run_postgres_network, run_postgres_restart
from tests.faults.s3_faults import run_s3_fault
from tests.support.postgres import PostgresServer

POSTGRES_ROLES = 5  # a PostgreSQL fault's run gives each of its five roles a conversation at least
DISK_AND_S3_LEAST = 2  # half decided before the fault, half during it

RunFault = Callable[[], Awaitable[FaultOutcome]]
DISKS: tuple[Stores, ...] = ("read_model", "ledger", "payload_store")
FAULT_NAMES = (
    "model_never_answers",
    "model_half_stream_close",
    "model_half_stream_hang",
    "model_rate_limited",
    "model_network_cut",
    "model_network_stall",
    "model_network_cut_postgresql",
    "postgres_restart_fast",
    "postgres_restart_immediate",
    "postgres_network_cut",
    "postgres_network_stall",
    "s3_unavailable_then_slow",
    *(f"disk_full_{disk}" for disk in DISKS),
)


@dataclass(frozen=True)
class Ground:
    """What the faults run on: the dev server, a PostgreSQL server a fault may restart (and its
    databases), an S3-compatible server (its credentials in the environment), a directory."""

    client: Client
    postgres: PostgresServer
    s3_url: str
    root: Path

    @property
    def address(self) -> str:
        return self.client.service_client.config.target_host


def every_fault(ground: Ground, conversations: int) -> dict[str, RunFault]:
    """name -> a run of that fault with `conversations` in flight (more where a fault needs more)."""
    client, root, pg, address = ground.client, ground.root, ground.postgres, ground.address
    n, pg_n, disk_n = conversations, max(conversations, POSTGRES_ROLES), max(conversations, DISK_AND_S3_LEAST)
    partial = functools.partial
    faults: dict[str, RunFault] = {
        "model_never_answers": partial(run_model_never_answers, client, root / "never", conversations=n),
        "model_half_stream_close": partial(
            run_model_half_stream, client, root / "half_close", conversations=n, then="close"
        ),
        "model_half_stream_hang": partial(
            run_model_half_stream, client, root / "half_hang", conversations=n, then="hang"
        ),
        "model_rate_limited": partial(run_model_rate_limited, client, root / "limited", conversations=n),
        "model_network_cut": partial(
            run_model_network, client, root / "net_cut", conversations=n, how="cut", when="mid_stream"
        ),
        "model_network_stall": partial(
            run_model_network, client, root / "net_stall", conversations=n, how="stall", when="before_reply"
        ),
        "model_network_cut_postgresql": lambda: run_model_network(
            client, root / "net_cut_pg", conversations=n, how="cut", when="mid_stream", database=pg.new_database()
        ),
        "postgres_restart_fast": partial(
            run_postgres_restart, client, root / "pg_fast", pg, conversations=pg_n, mode="fast"
        ),
        "postgres_restart_immediate": partial(
            run_postgres_restart, client, root / "pg_immediate", pg, conversations=pg_n, mode="immediate"
        ),
        "postgres_network_cut": partial(
            run_postgres_network, client, root / "pg_cut", pg, conversations=pg_n, mode="cut"
        ),
        "postgres_network_stall": partial(
            run_postgres_network, client, root / "pg_stall", pg, conversations=pg_n, mode="stall"
        ),
        "s3_unavailable_then_slow": partial(
            run_s3_fault,
            root / "s3",
            address,
            ground.s3_url,
            conversations=disk_n,
            phases=(("unavailable", 3.0), ("slow", 2.0)),
        ),
    }
    for stores in DISKS:
        faults[f"disk_full_{stores}"] = partial(
            run_disk_full, root / f"disk_{stores}", address, conversations=disk_n, stores=stores
        )
    assert tuple(faults) == FAULT_NAMES, "FAULT_NAMES lists every fault, in order"
    return faults
