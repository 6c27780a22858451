"""The agent's worker and ours are killed (SIGKILL) while a Pydantic AI agent's request waits; the
decision is given while both are down, and once they are back it lands once: the tool runs once
and the model is asked once more, not from the start."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from tests.agents.pydantic_ai_support import agents_client, asks_to_write, pending_cards, start_agent
from tests.support.processes import REPO_ROOT, WorkerProcess, process_env, run_cli
from tests.support.scripts import ScriptedModel

# Two workers killed and restarted around a waiting request: in `make test-scale`.
pytestmark = pytest.mark.long


@dataclass
class AgentWorkerProcess(WorkerProcess):
    """The agent's worker (tests/agents/pydantic_ai_worker.py) instead of ours."""

    queue: str = ""

    def start(self) -> AgentWorkerProcess:
        address = self.env["TEMPORAL_ADDRESS"]
        command = [sys.executable, "-m", "tests.agents.pydantic_ai_worker", address, self.queue]
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            command, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        return self


@contextmanager
def stopped_at_the_end(*workers: WorkerProcess) -> Iterator[None]:
    try:
        yield
    finally:
        for worker in workers:
            worker.stop()


async def test_both_workers_killed_while_the_request_waits_and_the_decision_lands_once(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = asks_to_write("notes.txt", "v2")
    env = process_env(settings, client.service_client.config.target_host)
    queue = f"agents-{uuid.uuid4().hex[:8]}"
    ours = [WorkerProcess(env, tmp_path / f"ours-{n}.log") for n in (1, 2)]
    theirs = [AgentWorkerProcess(env, tmp_path / f"agent-{n}.log", queue=queue) for n in (1, 2)]
    with stopped_at_the_end(*ours, *theirs):
        ours[0].start().wait_ready()
        theirs[0].start().wait_ready()
        handle = await start_agent(agents_client(client), queue, settings, tmp_path)
        [card] = await pending_cards(settings, client, handle.id)
        ours[0].kill()
        theirs[0].kill()

        decided = await run_cli(settings, client, "approve", card["request_id"], "--as", "bob")
        assert decided.returncode == 0, decided.stderr
        ours[1].start().wait_ready()
        theirs[1].start().wait_ready()
        answer = await handle.result()
    assert answer == "told: wrote 2 characters to notes.txt"
    assert (tmp_path / "notes.txt").read_text() == "v2", "the tool ran once"
    assert len(model.reply_requests) == 2, "the first model reply came from history, not from asking again"
