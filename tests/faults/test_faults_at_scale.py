"""Every fault at size (`make test-scale`): ten conversations in flight through each, nothing lost,
doubled or stuck once it ends. `make test` runs each smaller, with what a user sees, in the module
of its kind; `bench` (scenario `faults`) reports the same runs' seconds to recover."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from unittest.mock import patch

import pytest
from temporalio.client import Client

from tests.faults.catalogue import FAULT_NAMES, Ground, every_fault
from tests.support.postgres import PostgresServer
from tests.support.s3_support import CREDENTIALS, S3Server

CONVERSATIONS = 10
pytestmark = [pytest.mark.scale, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def restartable() -> Iterator[tuple[PostgresServer, S3Server]]:
    """A PostgreSQL server of this module's own (a restart would disturb the session's) and moto."""
    server, s3 = PostgresServer().start(), S3Server().start()
    try:
        with patch.dict(os.environ, CREDENTIALS):  # botocore reads them there
            yield server, s3
    finally:
        s3.stop()
        server.stop()


@pytest.mark.parametrize("name", FAULT_NAMES)
async def test_a_fault_at_size_loses_doubles_and_strands_nothing(
    client: Client, tmp_path: Path, restartable: tuple[PostgresServer, S3Server], name: str
) -> None:
    postgres, s3 = restartable
    outcome = await every_fault(Ground(client, postgres, s3.url, tmp_path), CONVERSATIONS)[name]()
    outcome.assert_clean()
    assert outcome.seconds_to_recover >= 0, outcome
