"""`make run` (run_local.py) creates the dev server's `approvals` Nexus endpoint, pointing at the
worker's namespace and task queue, and prints the CLI line that creates it on a real cluster."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.api.operatorservice.v1 import ListNexusEndpointsRequest
from temporalio.client import Client

from doors.nexus_endpoint import endpoint_command
from tests.project.test_run_local import LocalRun, all_gone, runs  # noqa: F401 (runs: the fixture)
from tests.support.processes import free_port
from tests.support.stack import until


def test_make_run_creates_the_approvals_endpoint(tmp_path: Path, runs: list[LocalRun]) -> None:  # noqa: F811
    ports = {name: free_port() for name in ("--temporal-port", "--temporal-ui-port", "--model-port", "--ui-port")}
    run = LocalRun(["--data-dir", str(tmp_path), *[str(item) for pair in ports.items() for item in pair]])
    runs.append(run)
    run.wait_for("Everything is up")
    assert any("nexus endpoint ready" in line and "(created)" in line for line in run.lines), run.lines
    assert any(endpoint_command("default", "durable-approvals") in line for line in run.lines)

    async def endpoint_target() -> tuple[str, str]:
        client = await Client.connect(f"localhost:{ports['--temporal-port']}")
        [endpoint] = (await client.operator_service.list_nexus_endpoints(ListNexusEndpointsRequest())).endpoints
        worker = endpoint.spec.target.worker
        return endpoint.spec.name, f"{worker.namespace}/{worker.task_queue}"

    assert asyncio.run(endpoint_target()) == ("approvals", "default/durable-approvals")
    pids = run.child_pids()
    assert run.interrupt() == 0
    until(lambda: all_gone(pids), timeout=30)
