"""The caller library as its own distribution (callers/python, `durable-approvals-caller`): its
wheel holds `durable_approvals` and nothing else, and installs with temporalio and pydantic only
into a fresh virtualenv beside an agent's project that has its own `workflows/`, `activities/`,
`config.py` and `core/`. A workflow of that project, run by a worker of that virtualenv, asks
through `request_approval`; our worker (in-process) opens the request, `starter.py approve`
decides it, and the caller's workflow returns `allow`."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from durable_approvals.types import derived_request_id
from tests.conftest import HistoryRecorder
from tests.support.failure_support import address_of
from tests.support.helpers import wait_pending
from tests.support.processes import REPO_ROOT, run_cli
from worker import build_worker

CALLER_DIR = REPO_ROOT / "callers" / "python"
READY = "caller worker ready"
# What the service needs and a caller must never get (import names).
SERVICE_ONLY_MODULES = ("fastapi", "uvicorn", "psycopg", "psycopg_pool", "mcp", "opentelemetry", "prometheus_client")
# The service's own top-level modules, which an agent's project may well have names of its own for.
SERVICE_TOP_LEVEL = (
    "core", "channels", "config", "storage", "doors", "maintenance", "workflows", "activities", "payload_store",
    "demo_model", "ui", "cli", "approvals_tools", "worker", "starter", "run_local",
)  # fmt: skip

# The agent's project: modules named like the service's, and a workflow that asks before it writes.
PROJECT_FILES = {
    "config.py": '''
        """The agent project's own settings."""
        import os

        TEMPORAL_ADDRESS = os.environ["TEMPORAL_ADDRESS"]
        CALLER_QUEUE = os.environ["CALLER_QUEUE"]
        APPROVALS_QUEUE = os.environ["APPROVALS_QUEUE"]
        OUT_DIR = os.environ["OUT_DIR"]
    ''',
    "core/__init__.py": '''
        """The agent project's own core."""
        READY = "caller worker ready"
    ''',
    "activities/__init__.py": "",
    "activities/notes.py": """
        from pathlib import Path

        from temporalio import activity

        import config


        @activity.defn
        async def write_notes(content: str) -> None:
            with (Path(config.OUT_DIR) / "notes.txt").open("a") as out:
                out.write(content)
    """,
    "workflows/__init__.py": "",
    "workflows/release.py": """
        from datetime import timedelta

        from temporalio import workflow

        with workflow.unsafe.imports_passed_through():
            from activities.notes import write_notes
            from durable_approvals import request_approval


        @workflow.defn(name="CallerRelease")
        class CallerRelease:
            @workflow.run
            async def run(self, content: str, approvals_queue: str) -> str:
                approval = await request_approval(
                    "write_file",
                    {"path": "notes.txt", "content": content},
                    key="notes",
                    title="Write the release notes",
                    agent="caller-project",
                    task_queue=approvals_queue,
                )
                if approval.approved:
                    await workflow.execute_activity(
                        write_notes, approval.arguments["content"], start_to_close_timeout=timedelta(seconds=30)
                    )
                return approval.decision
    """,
    "worker.py": """
        import asyncio

        from temporalio.client import Client
        from temporalio.contrib.pydantic import pydantic_data_converter
        from temporalio.worker import Worker

        import config
        from activities.notes import write_notes
        from core import READY
        from workflows.release import CallerRelease


        async def main() -> None:
            client = await Client.connect(config.TEMPORAL_ADDRESS, data_converter=pydantic_data_converter)
            async with Worker(
                client, task_queue=config.CALLER_QUEUE, workflows=[CallerRelease], activities=[write_notes]
            ):
                print(READY, flush=True)
                await asyncio.Event().wait()


        asyncio.run(main())
    """,
}

# Run by the virtualenv's interpreter from the project: what it has installed, and where it imports from.
INSPECT = """
import importlib.metadata as md, importlib.util, json, sys
out = {"prefix": sys.prefix, "origins": {}, "caller_files": [], "dists": {}}
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    # A module's file, or a namespace package's folders; None where it cannot be imported.
    where = spec and (spec.origin or str(spec.submodule_search_locations))
    out["origins"][name] = where or None
out["caller_files"] = [str(f) for f in md.distribution("durable-approvals-caller").files or []]
out["dists"] = {d.metadata["Name"].lower(): d.version for d in md.distributions()}
print(json.dumps(out))
"""


@dataclass
class CallerVenv:
    wheel: Path
    python: Path
    project: Path


def run(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def install(python: Path, wheel: Path) -> list[str]:
    """`pip install WHEEL` into the venv of `python`, as the README has it, or uv's: the same
    resolution from PyPI, as `make install` does it (uv asks the index for the eight distributions in
    parallel: seconds, where pip, asking one after another, takes 10-30). CALLER_INSTALLER=pip
    chooses pip."""
    uv = Path(sys.executable).parent / "uv"
    if os.environ.get("CALLER_INSTALLER", "uv") == "uv" and uv.exists():
        # Compiled as pip compiles: the caller's worker then starts in a second, not seven.
        return [str(uv), "pip", "install", "--python", str(python), "--compile-bytecode", "--quiet", str(wheel)]
    return [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)]


def venv_env(**extra: str) -> dict[str, str]:
    """The environment of the caller's processes: nothing points them at the service's checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


@pytest.fixture(scope="module")
def caller_venv(tmp_path_factory: pytest.TempPathFactory) -> CallerVenv:
    """The wheel built from callers/python (pip builds it with hatchling from PyPI), a fresh
    virtualenv (no system site-packages) and the wheel installed there with its dependencies:
    made once, for both tests."""
    tmp_path = tmp_path_factory.mktemp("caller")
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(CALLER_DIR)])
    [wheel] = dist.glob("durable_approvals_caller-*.whl")
    venv = tmp_path / "venv"
    # No pip in it: the service's installer fills it, and its site-packages holds only what the wheel brings.
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    run(install(python, wheel))
    project = tmp_path / "agent_project"
    for name, text in PROJECT_FILES.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return CallerVenv(wheel, python, project)


def top_level(paths: list[str]) -> set[str]:
    """The top-level names a RECORD's paths install (its own .dist-info left out)."""
    return {p.split("/", 1)[0] for p in paths if not p.split("/", 1)[0].endswith(".dist-info")}


def wheel_record(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        [record] = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
        return [row[0] for row in csv.reader(io.StringIO(archive.read(record).decode())) if row]


@asynccontextmanager
async def caller_worker(venv: CallerVenv, log: Path, **env: str) -> AsyncIterator[None]:
    """`python worker.py` of the agent's project, with the virtualenv's interpreter; killed on the way out."""
    proc = subprocess.Popen(
        [str(venv.python), "worker.py"],
        cwd=venv.project,
        env=venv_env(**env),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while READY not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise AssertionError(f"caller worker not ready: {log.read_text(errors='replace')[-3000:]}")
            await asyncio.sleep(0.1)
        yield
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_the_wheel_installs_durable_approvals_alone_with_temporalio_and_pydantic(caller_venv: CallerVenv) -> None:
    assert top_level(wheel_record(caller_venv.wheel)) == {"durable_approvals"}
    inspected = run(
        [str(caller_venv.python), "-c", INSPECT, "durable_approvals", *SERVICE_ONLY_MODULES, *SERVICE_TOP_LEVEL],
        cwd=caller_venv.project,
        env=venv_env(),
    )
    found = json.loads(inspected.stdout)
    venv_dir = caller_venv.python.parent.parent
    assert Path(found["prefix"]) == venv_dir
    assert top_level(found["caller_files"]) == {"durable_approvals"}, "installed: the one package"
    assert found["origins"]["durable_approvals"].startswith(str(venv_dir)), "from the venv, not the checkout"
    assert {"temporalio", "pydantic", "durable-approvals-caller"} <= set(found["dists"])
    assert found["dists"]["temporalio"] == metadata.version("temporalio"), "the version the service pins"
    assert not {m: o for m, o in found["origins"].items() if m in SERVICE_ONLY_MODULES and o}, "none of the service's"
    service_dists = {"fastapi", "uvicorn", "psycopg", "mcp", "opentelemetry-sdk", "opentelemetry-api", "openai"}
    assert not service_dists & set(found["dists"])
    # The project's own `workflows`, `activities`, `config` and `core` are what it imports; the
    # service's other names are nowhere to be found.
    for own in ("workflows", "activities", "config", "core", "worker"):
        assert found["origins"][own].startswith(str(caller_venv.project)), (own, found["origins"][own])
    others = set(SERVICE_TOP_LEVEL) - {"workflows", "activities", "config", "core", "worker"}
    assert not {m: o for m, o in found["origins"].items() if m in others and o}


async def test_a_caller_in_its_own_venv_asks_and_gets_allow(
    client: Client, settings: Settings, histories: HistoryRecorder, caller_venv: CallerVenv, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    caller_queue = f"caller-{uuid.uuid4().hex[:8]}"
    env = dict(
        TEMPORAL_ADDRESS=address_of(client),
        CALLER_QUEUE=caller_queue,
        APPROVALS_QUEUE=settings.task_queue,
        OUT_DIR=str(out),
    )
    async with build_worker(client, settings), caller_worker(caller_venv, tmp_path / "caller.log", **env):
        workflow_id = f"caller-release-{uuid.uuid4().hex[:8]}"
        handle = await client.start_workflow(
            "CallerRelease", args=["v2", settings.task_queue], id=workflow_id, task_queue=caller_queue, result_type=str
        )
        rid = histories.track(derived_request_id(workflow_id, "notes"))
        [row] = await wait_pending(settings.approvals_db, rid, 1)
        assert row["tool_name"] == "write_file"
        assert not (out / "notes.txt").exists(), "nothing written before the approval"
        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        assert await asyncio.wait_for(handle.result(), 60) == "allow"
    assert (out / "notes.txt").read_text() == "v2"
