"""A workflow of the Temporal TypeScript SDK (examples/typescript) asks through `ApprovalRequest` as
a child workflow with plain JSON: its requests show in the read model, a CLI approval lets it run,
a CLI denial's reason reaches it and nothing runs.

Needs node and npm: without them the test skips, unless REQUIRE_NODE is set (then it fails). The
example's dependencies are installed once with `npm ci` into examples/typescript/node_modules and
kept while package-lock.json is unchanged; `tsc` builds incrementally into its lib/.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from durable_approvals import ApprovalResult
from tests.conftest import HistoryRecorder
from tests.support.failure_support import address_of
from tests.support.helpers import approval_row, wait_pending
from tests.support.processes import REPO_ROOT, run_cli
from worker import build_worker

# The TypeScript example installed with npm and run by node beside a worker: in `make test-scale`.
pytestmark = pytest.mark.long

EXAMPLE = REPO_ROOT / "examples" / "typescript"
STAMP = EXAMPLE / "node_modules" / ".installed-from"  # the lock file's hash; npm ci removes it with the rest
QUIET = ("--no-audit", "--no-fund", "--loglevel=error")
FREEZE = "not during the freeze"


def tools() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = "node" if node is None else "npm"
        if os.environ.get("REQUIRE_NODE"):
            pytest.fail(f"REQUIRE_NODE is set but there is no {missing} on PATH")
        pytest.skip(f"no {missing} on PATH (install nodejs and npm, or set REQUIRE_NODE=1 to fail instead)")
    return node, npm


def lock_hash() -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((EXAMPLE / name).read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """One install and build at a time, should two suites run in this tree at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def npm(npm_bin: str, *args: str, timeout: float) -> None:
    done = subprocess.run(
        [npm_bin, *args], cwd=EXAMPLE, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, f"npm {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def node() -> str:
    """node, with the example installed (`npm ci`, only when the lock file changed) and built."""
    node_bin, npm_bin = tools()
    with exclusive(REPO_ROOT / "build" / "typescript-example.lock"):
        wanted = lock_hash()
        if not STAMP.is_file() or STAMP.read_text() != wanted:
            # npm's own cache (~/.npm) serves a reinstall, and a fresh clone on the same machine.
            npm(npm_bin, "ci", "--prefer-offline", *QUIET, timeout=600)
            STAMP.write_text(wanted)
        npm(npm_bin, "run", "build", "--silent", timeout=300)
    return node_bin


class NodeProcess:
    """`node lib/SCRIPT.js` of the example, in its own process group, its output in a file."""

    def __init__(self, node: str, script: str, env: dict[str, str], log: Path, *args: str) -> None:
        self.name, self.log, self.err = script, log, log.with_suffix(".err")
        with log.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(
                [node, f"lib/{script}.js", *args],
                cwd=EXAMPLE,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} from {self.name}: {self.output()[-2000:]}{self.errors()}")
            time.sleep(0.1)

    def errors(self) -> str:
        return "\n" + self.err.read_text(errors="replace")[-3000:]

    async def result(self, timeout: float = 60.0) -> dict[str, Any]:
        """The JSON line the starter prints when its workflow completes."""
        code = await asyncio.to_thread(self.proc.wait, timeout)
        assert code == 0, f"{self.name} exited {code}: {self.output()[-2000:]}{self.errors()}"
        result: dict[str, Any] = json.loads(self.output().strip().splitlines()[-1])
        return result

    def stop(self) -> None:
        """SIGINT (the worker shuts down on it), then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)


@pytest.mark.timeout(900)  # the first run installs the example (npm ci) before the test's own minute
async def test_a_typescript_workflow_asks_as_a_child_and_acts_only_when_approved(
    node: str, client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": address_of(client),
        "TEMPORAL_NAMESPACE": client.namespace,
        "TASK_QUEUE": settings.task_queue,  # the service's: where ApprovalRequest runs
        "PIPELINE_TASK_QUEUE": f"ts-pipeline-{uuid.uuid4().hex[:8]}",
    }
    started: list[NodeProcess] = []

    def start(script: str, name: str, *args: str) -> NodeProcess:
        started.append(NodeProcess(node, script, env, tmp_path / f"{name}.log", *args))
        return started[-1]

    try:
        async with build_worker(client, settings):
            ts_worker = start("worker", "worker")
            # The worker bundles its workflow code before it polls: seconds, more on a busy machine.
            await asyncio.to_thread(ts_worker.wait_for, "worker ready", 120)

            approved_id, denied_id = (f"release-{name}-{uuid.uuid4().hex[:8]}" for name in ("ok", "no"))
            approved = start("starter", "approved", "--workflow-id", approved_id, "--service", "api", "--version=2.0")
            denied = start("starter", "denied", "--workflow-id", denied_id, "--service", "db", "--version=9.9")
            approved_rid = histories.track(f"{approved_id}.deploy")  # the example's request id: caller id + key
            denied_rid = histories.track(f"{denied_id}.deploy")

            [row] = await wait_pending(settings.approvals_db, approved_rid, 1, timeout=60)
            assert (row["request_id"], row["tool_name"], row["tool_call_id"]) == (approved_rid, "deploy", "deploy")
            await wait_pending(settings.approvals_db, denied_rid, 1, timeout=60)
            listed = await run_cli(settings, client, "pending", "--json")
            [card] = [r for r in json.loads(listed.stdout) if r["request_id"] == approved_rid]
            assert card["arguments"] == {"service": "api", "version": "2.0"}
            annotations = card["tool"]["annotations"]
            assert annotations["requester"]["workflow_id"] == approved_id, "the TS object arrived as the model"
            assert annotations["requester"]["agent"] == "ts-release-pipeline"
            assert annotations["context"] == "the release pipeline reached its deploy step"
            assert annotations["title"] == "Deploy api 2.0"

            done = await run_cli(settings, client, "approve", approved_rid, "--as", "bob")
            assert done.returncode == 0, done.stderr
            done = await run_cli(settings, client, "deny", denied_rid, "--reason", FREEZE, "--as", "bob")
            assert done.returncode == 0, done.stderr

            ok, no = await approved.result(), await denied.result()
            assert (ok["decision"], ok["decided_by"], ok["request_id"]) == ("allow", "bob", approved_rid)
            assert ok["ran"] is True and ok["summary"] == "ran: deploy api 2.0"
            assert (no["decision"], no["reason"], no["ran"]) == ("deny", FREEZE, False)
            assert no["summary"] == f"not run: deny ({FREEZE})"

            # What the TS workflow received is what the service's workflow returned.
            request = await client.get_workflow_handle(approved_rid, result_type=ApprovalResult).result()
            assert (request.decision, request.door) == ("allow", "cli")
            assert request.arguments == {"service": "api", "version": "2.0"}
            assert await client.get_workflow_handle(approved_id).result() == ok
    finally:
        for process in reversed(started):
            process.stop()

    assert approval_row(settings.approvals_db, approved_rid)["decision"] == "allow"
    assert approval_row(settings.approvals_db, denied_rid)["reason"] == FREEZE
