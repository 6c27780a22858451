"""A tool an earlier release left on the queue of a host that is gone still runs after the deploy.

The release before this one sent an approved call to its host's queue with no schedule-to-start
timeout: when that host was gone, the call waited for it forever. Here that release runs for real
(its source, from this repository's history): two of its workers, the conversation pinned to one,
that one SIGKILLed, the approval given to the other, which sends the call to the dead host's queue.
Then the deploy: this release's worker alone. Its watch finds the stranded call, the conversation
moves, and the write runs once on the new host.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from tests.support.failure_support import address_of
from tests.support.helpers import eventually, rows, wait_pending, wait_status, workspace_of
from tests.support.processes import REPO_ROOT, WorkerProcess, process_env
from tests.support.scripts import ScriptedModel
from tests.tools.host_support import Hosts, by_the_word

# A checkout of an earlier release, its worker and CLI, then this release's hosts: in `make test-scale`.
pytestmark = pytest.mark.long

# The last commit of the release before conversations moved off a gone host (host-gone-moves).
EARLIER_RELEASE = "b1dd7b6"
GONE_SECONDS = 20


def earlier_release(into: Path) -> Path:
    """That release's source tree, as `git archive` gives it."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", EARLIER_RELEASE], cwd=REPO_ROOT, capture_output=True, check=True
    )
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def earlier_cli(checkout: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "starter.py", *args], cwd=checkout, env=env, capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def stranded_on(client: Client, conversation_id: str, host: str) -> bool:
    """The conversation's tool is scheduled on the host's queue (and waits there)."""
    description = await client.get_workflow_handle(conversation_id).describe()
    queues = [p.activity_options.task_queue.name for p in description.raw_description.pending_activities]
    return any(queue.endswith(f"@{host}") for queue in queues)


@pytest.mark.timeout(300)
async def test_a_tool_an_earlier_release_sent_to_a_gone_host_runs_after_the_deploy(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = by_the_word
    settings = replace(settings, host_gone_seconds=GONE_SECONDS)
    checkout = earlier_release(tmp_path / "earlier")
    db = settings.approvals_db
    hosts = Hosts(settings, client, tmp_path)

    def earlier_worker(host: str) -> WorkerProcess:
        env = process_env(settings, address_of(client), WORKER_HOST=host, WORKSPACE_DIR=str(hosts.workspace(host)))
        worker = WorkerProcess(env, tmp_path / f"worker-{host}.log", cwd=checkout)
        hosts.workers[host] = worker.start().wait_ready()
        return worker

    cli_env = process_env(settings, address_of(client))
    try:
        earlier_worker("old-a")
        conversation = earlier_cli(checkout, cli_env, "start", "write stranded").split()[-1]
        [row] = await wait_pending(db, conversation, 1)
        earlier_worker("old-b")
        hosts.workers["old-a"].kill()
        earlier_cli(checkout, cli_env, "approve", row["request_id"])
        await eventually(lambda: stranded_on(client, conversation, "old-a"), timeout=60)

        hosts.workers["old-b"].kill()  # the deploy: this release's worker alone
        deployed = time.monotonic()
        hosts.start("new-c", HOST_GONE_SECONDS=str(GONE_SECONDS))
        await wait_status(client, conversation, "idle", tool_results=1, timeout=120)
        took = time.monotonic() - deployed
    finally:
        hosts.stop_all()
    assert (workspace_of(hosts.workspace("new-c"), conversation) / "stranded.txt").read_text() == "stranded"
    assert not (workspace_of(hosts.workspace("old-a"), conversation) / "stranded.txt").exists()
    assert "told to move" in hosts.log("new-c")
    moved = rows(db, "SELECT payload_json FROM ui_events WHERE event_type = 'conversation.moved'")
    assert len(moved) == 1 and "host_gone" in moved[0]["payload_json"], moved
    assert took < 3 * GONE_SECONDS + 30, took
