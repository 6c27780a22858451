"""PostgreSQL's faults, survived: the server restarted (fast and immediate) and the network to it
cut or stalled, while a tool's ledger claim is held, a reply streams and decisions go out by the
CLI and the door (tests/faults/postgres_faults.py; small here, larger in `bench`). After each:
nothing lost, nothing doubled, nothing stuck, every approved command ran once, the worker and the
door's store went on without a restart, and a person whose `approve` met the fault read one line
saying the database is unreachable, with exit status 1, and could approve once it was back.

Beside them, the two mechanisms those rest on, shown alone: a restarted server's dead connections
are dropped from the pool before any operation fails on them, and a ledger claim whose answer the
network lost is known by its own try as its own, so the tool runs (once) instead of being reported
as an unknown outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from temporalio.client import Client

from activities.ledger import Ledger
from config.settings import Settings
from storage.backend import Tx
from storage.postgres_backend import PostgresBackend
from tests.faults.postgres_faults import PostgresFaultSight, run_postgres_network, run_postgres_restart
from tests.support.helpers import eventually
from tests.support.postgres import PostgresServer
from tests.support.stack import one_line
from tests.support.tcp_proxy import TcpProxy
from ui.server import close_stores, create_app

CONVERSATIONS = 5  # one of each role: tool, stream, cli, door, probe


@pytest.fixture(scope="module")
def restartable_postgres() -> Iterator[PostgresServer]:
    """A server of this module's own: the session's is shared with tests a restart would disturb."""
    server = PostgresServer().start()
    yield server
    server.stop()


def assert_said_unreachable(sight: PostgresFaultSight) -> None:
    for status, stderr in sight.cli_failures:
        line = one_line(stderr)
        assert status == 1, (status, stderr)
        assert line.startswith("error: the read model (APPROVALS_DB) at 127.0.0.1:"), line
        assert "is unreachable: " in line and line.endswith("; try again once it is back"), line
    for message in sight.door_failures:
        assert "is unreachable: " in message, message


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_a_restart_loses_doubles_and_strands_nothing(
    client: Client, tmp_path: Path, restartable_postgres: PostgresServer, mode: Literal["fast", "immediate"]
) -> None:
    sight = PostgresFaultSight()
    outcome = await run_postgres_restart(
        client, tmp_path, restartable_postgres, conversations=CONVERSATIONS, mode=mode, sight=sight
    )
    print(outcome, sight)
    outcome.assert_clean()
    assert_said_unreachable(sight)


async def test_a_cut_or_stalled_network_is_said_in_one_line_and_ridden_out(
    client: Client, tmp_path: Path, restartable_postgres: PostgresServer
) -> None:
    """Both at once (each its own database, proxy, worker and conversations), to save the time."""
    sights: dict[Literal["cut", "stall"], PostgresFaultSight] = {
        "cut": PostgresFaultSight(),
        "stall": PostgresFaultSight(),
    }
    outcomes = await asyncio.gather(
        *(
            run_postgres_network(
                client, tmp_path / mode, restartable_postgres, conversations=CONVERSATIONS, mode=mode, sight=sight
            )
            for mode, sight in sights.items()
        )
    )
    print(outcomes, sights)
    for outcome, sight in zip(outcomes, sights.values(), strict=True):
        outcome.assert_clean()
        assert len(sight.cli_failures) == 1 and sight.retried >= 1, (
            "the person's approve met the outage, then went through"
        )
        assert_said_unreachable(sight)
        assert "no answer within 1s (DATABASE_WAIT_SECONDS)" in sight.cli_failures[0][1]


async def _one(tx: Tx) -> Any:
    return await tx.fetchone("SELECT 1 AS one")


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_no_operation_fails_on_a_connection_the_restarted_server_closed(
    restartable_postgres: PostgresServer, mode: str
) -> None:
    backend = PostgresBackend(restartable_postgres.new_database(), "projection", wait_seconds=10)
    try:
        await asyncio.gather(*(backend.run(_one, write=False) for _ in range(4)))  # connections pooled
        await asyncio.to_thread(restartable_postgres.restart, mode)
        for write in (True, False, True, False, True):  # each pooled connection is dead by now
            assert await backend.run(_one, write=write) == {"one": 1}
    finally:
        await backend.close()


async def test_a_claim_whose_answer_the_network_lost_runs_its_tool_once(
    restartable_postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim's insert is held by a stalled network past the ledger's wait; the network comes
    back, the insert lands, and its answer is gone with the connection: the ledger's next try finds
    the row its own try wrote and runs the tool; a later attempt does not."""
    direct = restartable_postgres.new_database()
    monkeypatch.setenv("DATABASE_WAIT_SECONDS", "1")
    with TcpProxy(restartable_postgres.port) as proxy:
        ledger = Ledger(direct.replace(f":{restartable_postgres.port}/", f":{proxy.port}/"))
        try:
            assert await ledger.state_of("warm") is None  # a connection pooled before the stall
            proxy.stall()
            claim = asyncio.ensure_future(ledger.begin("perm_c_call_1", "run_shell", 1))
            await asyncio.sleep(1.5)
            assert not claim.done(), "the claim waits for its ledger"
            proxy.restore()
            assert (await claim).verdict == "run"
            assert (await ledger.begin("perm_c_call_1", "run_shell", 2)).verdict == "unknown"
        finally:
            await ledger.close()


async def test_the_inbox_says_503_while_the_database_is_cut_and_serves_again_after(
    restartable_postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DATABASE_WAIT_SECONDS", "1")
    direct = restartable_postgres.new_database()
    with TcpProxy(restartable_postgres.port) as proxy:
        through = direct.replace(f":{restartable_postgres.port}/", f":{proxy.port}/")
        app = create_app(Settings(approvals_db=through, workspace_dir=tmp_path, payload_store=str(tmp_path)))
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:

                async def serves() -> bool:
                    return (await http.get("/api/approvals?status=pending")).status_code == 200

                # Before the cut too: on loaded cores the first connection can take longer than the one-second wait.
                await eventually(serves, timeout=30)
                proxy.cut()
                down = await http.get("/api/approvals?status=pending")
                proxy.restore()
                await eventually(serves, timeout=30)  # the same process, not restarted
        finally:
            await close_stores(app)
    error = down.json()["error"]
    assert down.status_code == 503 and error["type"] == "StoreUnavailable", down.text
    assert error["message"].startswith("the read model (APPROVALS_DB) at 127.0.0.1:"), error
    assert "is unreachable: " in error["message"], error
