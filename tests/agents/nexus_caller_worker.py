"""Another team's worker as a process of its own, so a test can SIGKILL it: it runs the Nexus
caller pipeline in its namespace, with the plain pydantic converter (no access to our payload
store). `python -m tests.agents.nexus_caller_worker ADDRESS NAMESPACE TASK_QUEUE`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from tests.agents.nexus_callers import NexusReleasePipeline
from tests.support.caller_workflows import write_release_file
from tests.support.processes import REPO_ROOT

READY = "caller worker ready"


@dataclass
class CallerWorker:
    address: str
    namespace: str
    task_queue: str
    log_file: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> CallerWorker:
        command = [sys.executable, "-m", "tests.agents.nexus_caller_worker", self.address, self.namespace]
        self.proc = subprocess.Popen(
            [*command, self.task_queue],
            cwd=REPO_ROOT,
            stdout=self.log_file.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while READY not in self.log_file.read_text(errors="replace"):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"caller worker not ready: {self.log_file.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


async def main(address: str, namespace: str, task_queue: str) -> None:
    client = await Client.connect(address, namespace=namespace, data_converter=pydantic_data_converter)
    workflows, activities = [NexusReleasePipeline], [write_release_file]
    async with Worker(client, task_queue=task_queue, workflows=workflows, activities=activities):
        print(READY, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(*sys.argv[1:4]))
