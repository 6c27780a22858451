"""What the host tests share: a model that writes and runs by the user's word, worker processes on
named hosts, and a look at where a conversation's tools wait."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from tests.support.failure_support import address_of
from tests.support.processes import WorkerProcess, process_env, run_cli
from tests.support.scripts import last_role

SLOW_SHELL = "echo started >> runs.txt; sleep {seconds}; echo finished >> runs.txt"


def by_the_word(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """`write NAME` writes NAME.txt; `run slowly N` runs a shell that marks runs.txt for N seconds."""
    if last_role(messages) == "tool":
        return text_reply("done")
    text = str(messages[-1]["content"])
    if text.startswith("run slowly"):
        seconds = text.split()[-1]
        return tool_reply((f"s-{seconds}", "run_shell", {"command": SLOW_SHELL.format(seconds=seconds)}))
    name = text.removeprefix("write ")
    return tool_reply((f"w-{name}", "write_file", {"path": f"{name}.txt", "content": name}))


class Hosts:
    """Worker processes, each on its own host name and workspace, stopped at the end."""

    def __init__(self, settings: Settings, client: Client, tmp: Path, **env: str) -> None:
        self.settings, self.client, self.tmp, self.env = settings, client, tmp, env
        self.workers: dict[str, WorkerProcess] = {}

    def workspace(self, host: str) -> Path:
        return self.tmp / f"workspace-{host}"

    def start(self, host: str, *, command_prefix: list[str] | None = None, **env: str) -> WorkerProcess:
        extra = {"WORKER_HOST": host, "WORKSPACE_DIR": str(self.workspace(host)), **self.env, **env}
        environment = process_env(self.settings, address_of(self.client), **extra)
        worker = WorkerProcess(environment, self.tmp / f"worker-{host}.log", command_prefix=command_prefix)
        self.workers[host] = worker.start().wait_ready()
        return worker

    def lose(self, host: str) -> None:
        """SIGKILL the host's worker and its tools, and take its workspace with it."""
        self.workers[host].kill()
        shutil.rmtree(self.workspace(host), ignore_errors=True)

    def log(self, host: str) -> str:
        return (self.tmp / f"worker-{host}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for worker in self.workers.values():
            worker.kill()


async def hosts_listing(settings: Settings, client: Client) -> dict[str, dict[str, Any]]:
    """`starter.py hosts --json`, by host."""
    listed = await run_cli(settings, client, "hosts", "--json")
    assert listed.returncode == 0, listed.stderr
    return {row["host"]: row for row in json.loads(listed.stdout)}


async def shown(settings: Settings, client: Client, conversation_id: str) -> str:
    out = await run_cli(settings, client, "show", conversation_id)
    assert out.returncode == 0, out.stderr
    return out.stdout


def terminate(worker: WorkerProcess) -> None:
    """SIGTERM to the worker alone, as `docker stop` or a rollout sends it (not to its tools)."""
    assert worker.proc is not None
    os.kill(worker.proc.pid, 15)
