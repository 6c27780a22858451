"""PostgreSQL failing beneath the service while decisions, tool runs and streamed replies are in
flight: the server restarted (`pg_ctl restart -m fast`: sessions told and closed; `-m immediate`:
killed, then crash recovery), and the network to it cut (connections reset, new ones refused) or
stalled (held open, nothing forwarded) and restored, by a TcpProxy in front of the server that
the worker, the CLI and the door reach it through.

Each scenario runs `conversations` conversations (roles in tests/faults/postgres_fault_drive.py)
on a worker of its own, in this process, on the dev server `client` reaches, with a database of
its own on `server` (whose commits survive a crash: synchronous_commit on, as PostgreSQL's default
is). The worker waits for the database as DATABASE_WAIT_SECONDS tells it (`worker_wait`), the
person's CLI `cli_wait`. Measured: seconds from the fault's end until the first decision sent after
it ran its tool; lost (a decided call whose command never ran or whose result was reported
unknown, an approval that vanished); doubled (a command run twice, a call asked or answered
twice); stuck (a conversation not idle, with its result and its read-model rows caught up, by the
deadline). What a person saw goes into a `PostgresFaultSight` when one is passed.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import psycopg
from temporalio.client import Client

from activities.ledger import Ledger
from config.settings import Settings
from demo_model.script import respond
from demo_model.server import ScriptedModelServer
from storage.store import ProjectionStore
from tests.faults.outcome import FaultOutcome
from tests.faults.postgres_fault_drive import ROLES, Fault, PostgresFaultSight, Run, drive
from tests.support.postgres import PostgresServer
from tests.support.processes import process_env
from tests.support.tcp_proxy import TcpProxy

__all__ = ["PostgresFaultSight", "run_postgres_network", "run_postgres_restart"]

CHUNK_DELAY = 0.02  # seconds between streamed pieces: a reply streams for about a second
WORKER_WAIT = 3.0
CLI_WAIT = 1.0


async def run_postgres_restart(
    client: Client,
    workdir: Path,
    server: PostgresServer,
    *,
    conversations: int = 5,
    mode: Literal["fast", "immediate"] = "fast",
    sight: PostgresFaultSight | None = None,
    deadline_seconds: float = 30.0,
) -> FaultOutcome:
    """`pg_ctl restart -m MODE` while a tool's claim is held, a reply streams and decisions go out."""
    restarting: list[asyncio.Future[None]] = []

    async def begin() -> None:
        restarting.append(asyncio.ensure_future(asyncio.to_thread(server.restart, mode)))
        await asyncio.sleep(0)

    async def end(cli_done: Awaitable[object]) -> None:
        await restarting[0]  # over once the server takes connections again

    fault = Fault(f"postgres_restart_{mode}", begin, end)
    async with _run(client, workdir, server, conversations, through_proxy=None) as run:
        return await drive(run, fault, WORKER_WAIT, sight or PostgresFaultSight(), deadline_seconds)


async def run_postgres_network(
    client: Client,
    workdir: Path,
    server: PostgresServer,
    *,
    conversations: int = 5,
    mode: Literal["cut", "stall"] = "cut",
    outage_seconds: float = 2.0,
    sight: PostgresFaultSight | None = None,
    deadline_seconds: float = 30.0,
) -> FaultOutcome:
    """The network to PostgreSQL cut or stalled for `outage_seconds` (and at least until the person's
    `approve` gave up), then restored."""
    proxy = TcpProxy(server.port).start()

    async def begin() -> None:
        proxy.cut() if mode == "cut" else proxy.stall()

    async def end(cli_done: Awaitable[object]) -> None:
        await asyncio.gather(asyncio.sleep(outage_seconds), cli_done)
        proxy.restore()

    fault = Fault(f"postgres_network_{mode}", begin, end)
    try:
        async with _run(client, workdir, server, conversations, through_proxy=proxy) as run:
            return await drive(run, fault, WORKER_WAIT, sight or PostgresFaultSight(), deadline_seconds)
    finally:
        proxy.stop()


@asynccontextmanager
async def _run(
    client: Client, workdir: Path, server: PostgresServer, conversations: int, through_proxy: TcpProxy | None
) -> AsyncIterator[Run]:
    if conversations < len(ROLES):
        raise ValueError(f"conversations={conversations}: at least one for each role ({', '.join(ROLES)})")
    direct = _durable_database(server)
    database = direct if through_proxy is None else direct.replace(f":{server.port}/", f":{through_proxy.port}/")
    model = ScriptedModelServer(respond, chunk_delay=CHUNK_DELAY).start()
    settings = Settings(
        task_queue=f"pg-faults-{uuid.uuid4().hex[:8]}",
        approvals_db=database,
        workspace_dir=workdir / "workspace",
        payload_store=str(workdir / "payloads"),
        openai_base_url=model.base_url,
        openai_api_key="fault-key",
        llm_model="scripted-demo",
        llm_stream=True,
        approval_timeout=3600.0,
    )
    env = process_env(settings, client.service_client.config.target_host, DATABASE_WAIT_SECONDS=str(CLI_WAIT))
    door, seen, ledger = ProjectionStore(database), ProjectionStore(direct), Ledger(direct)
    ids = [f"pgf-{uuid.uuid4().hex[:8]}-{n}" for n in range(conversations)]
    try:
        yield Run(client, settings, env, door, seen, ledger, ids)
    finally:
        await asyncio.gather(door.close(), seen.close(), ledger.close())
        model.stop()


def _durable_database(server: PostgresServer) -> str:
    """A new database whose commits survive the server's crash: the test server runs with
    synchronous_commit off, under which an immediate shutdown may lose the last ones (as it would
    for any deployment that turns it off: the ledger's guard relies on it)."""
    url = server.new_database()
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{url.rsplit("/", 1)[1]}" SET synchronous_commit = on')
    return url
