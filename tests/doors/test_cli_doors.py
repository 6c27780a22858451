"""CLI arguments are checked before anything runs (one line, exit 2), and a reader that stops early
(`show X | head -1`) ends the CLI cleanly: no traceback, exit 0."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from doors.control import start_conversation
from tests.support.processes import REPO_ROOT, process_env
from tests.support.stack import one_line
from tests.support.ui_fixtures import seed_conversation, seed_pending

BAD_USAGE = [
    ["show", "conv-x", "--timeout", "-1"],
    ["show", "conv-x", "--timeout", "0"],
    ["show", "conv-x", "--timeout", "nan"],
    ["show", "conv-x", "--timeout", "inf"],
    ["show", "conv-x", "--timeout", "soon"],
    ["show", ""],
    ["send", "", "hello"],
    ["send", "conv-x", ""],
    ["start", ""],
    ["start", "--id", "", "hello"],
    ["approve", ""],
    ["deny", "  "],
    ["watch", ""],
    ["pending", "--conversation", ""],
]


def _cli(settings: Settings, address: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = process_env(settings, address)
    command = [sys.executable, "starter.py", *args]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", BAD_USAGE, ids=[" ".join(a) or "empty" for a in BAD_USAGE])
def test_bad_arguments_are_one_line_and_exit_2(settings: Settings, args: list[str]) -> None:
    # Nothing listens on this address: a usage error must be found before any connection.
    done = _cli(settings, "127.0.0.1:9", *args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert one_line(done.stderr).startswith("error: ")


def _first_line_then_close(settings: Settings, address: str, *args: str) -> tuple[str, int, str]:
    """Runs the CLI into a pipe, reads one line and closes the pipe, as `| head -1` does."""
    env = process_env(settings, address)
    proc = subprocess.Popen(
        [sys.executable, "starter.py", *args],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    code = proc.wait(timeout=60)
    return first, code, proc.stderr.read()


async def test_a_closed_pipe_ends_show_pending_and_conversations_cleanly(
    env: WorkflowEnvironment, client: Client, settings: Settings
) -> None:
    cid = await start_conversation(client, settings, "many waits (no worker runs)", f"pipe-{uuid.uuid4().hex[:6]}")
    try:
        for n in range(400):  # far more output than a pipe holds
            await seed_pending(settings, cid, f"call_{n}", "run_shell", {"command": f"echo {n} " + "x" * 300})
            await seed_conversation(settings, f"pipe-other-{n}")
        address = env.client.service_client.config.target_host
        for args in (["show", cid, "--timeout", "0.5"], ["pending"], ["conversations"], ["pending", "--json"]):
            first, code, stderr = _first_line_then_close(settings, address, *args)
            assert first.strip(), args
            assert "Traceback" not in stderr and "BrokenPipe" not in stderr, (args, stderr)
            assert code == 0, (args, code, stderr)
    finally:
        await client.get_workflow_handle(cid).terminate("test over")
