"""Both workers die while an OpenAI Agents SDK agent's request waits: the agent's worker and the
approvals worker are SIGKILLed and started again, and the decision still lands once: the tool
runs once, and the model is asked once before the decision and once after it."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from durable_approvals import derived_request_id
from examples.openai_agents_approval import agents_plugin
from examples.openai_agents_writer import NotesWriterAgent, WriterOutcome, WriterTask
from tests.agents.test_openai_agents_adapter import tool_outputs_seen, writes_then_quotes
from tests.support.helpers import wait_pending
from tests.support.processes import REPO_ROOT, WorkerProcess, process_env, run_cli
from tests.support.scripts import ScriptedModel

# Two workers killed and restarted around a waiting request: in `make test-scale`.
pytestmark = pytest.mark.long


@dataclass
class AgentWorkerProcess(WorkerProcess):
    """The example's agent worker (`--serve`) in its own process, as the agent's team runs it;
    it logs "agent worker ready", which `wait_ready` waits for."""

    queue: str = ""
    notes: Path = field(default_factory=Path)

    def start(self) -> AgentWorkerProcess:
        command = [sys.executable, "-m", "examples.openai_agents_approval", "--serve"]
        command += ["--queue", self.queue, "--notes-dir", str(self.notes)]
        log = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            command, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        return self


@contextmanager
def killed_at_the_end(started: list[WorkerProcess]) -> Iterator[None]:
    try:
        yield
    finally:
        for worker in started:
            worker.kill()


async def test_the_decision_lands_once_after_both_workers_are_killed_while_the_request_waits(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    assert model.server is not None
    model.behaviour = writes_then_quotes
    env = process_env(settings, client.service_client.config.target_host)
    queue, notes = f"agents-{uuid.uuid4().hex[:8]}", tmp_path / "notes"
    started: list[WorkerProcess] = []

    def approvals_worker(n: int) -> WorkerProcess:
        started.append(WorkerProcess(env, tmp_path / f"worker-{n}.log").start().wait_ready())
        return started[-1]

    def agents_worker(n: int) -> WorkerProcess:
        log = tmp_path / f"agent-worker-{n}.log"
        started.append(AgentWorkerProcess(env, log, queue=queue, notes=notes).start().wait_ready())
        return started[-1]

    with killed_at_the_end(started):
        ours, theirs = approvals_worker(1), agents_worker(1)
        caller = await Client.connect(
            client.service_client.config.target_host,
            namespace=client.namespace,
            plugins=[agents_plugin(model.server.base_url, "test-key")],
        )
        task = WriterTask(prompt="write once to once.txt as call-k1", approvals_queue=settings.task_queue)
        agent = await caller.start_workflow(
            NotesWriterAgent.run, task, id=f"notes-writer-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        rid = derived_request_id(agent.id, "openai-agents/call-k1")
        await wait_pending(settings.approvals_db, rid, 1)
        assert len(model.reply_requests) == 1

        theirs.kill()
        ours.kill()
        approvals_worker(2)
        agents_worker(2)
        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr

        outcome = WriterOutcome.model_validate(await agent.result())
        assert [(d.request_id, d.decision, d.decided_by) for d in outcome.decisions] == [(rid, "allow", "bob")]
        assert (notes / "once.txt").read_text() == "once", "the approved write ran once"
        assert tool_outputs_seen(model, "call-k1") == ["wrote 4 characters to once.txt"]
        assert len(model.reply_requests) == 2, "the restarted worker replayed the first model call, not re-asked it"
