"""Run one short-lived process in the tool sandbox and collect what it printed: the one way
run_shell and the built-in file tools start their processes, so both are confined alike."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from activities.heartbeat import heartbeating
from activities.sandbox import SandboxPolicy, quick_to_launch
from activities.worker_metrics import counted_launch
from activities.workspaces import Ready


@dataclass(frozen=True)
class Finished:
    returncode: int | None  # None: it ran past its timeout and was killed
    stdout: bytes
    stderr: bytes  # empty when merged into stdout


async def run_sandboxed(
    argv: Sequence[str],
    workspace: Path,
    policy: SandboxPolicy,
    beat: Callable[[], None],
    timeout: float,
    stdin: bytes | None = None,
    merge_stderr: bool = False,
    ready: Ready | None = None,
) -> Finished:
    """Raises SandboxUnavailable (nothing ran) when no sandbox starts and the policy wants one.
    `ready` is awaited once the launch is prepared, right before the process starts (see
    Workspace.ready); whatever it raises, nothing was started."""
    workspace.mkdir(parents=True, exist_ok=True)
    if quick_to_launch(workspace, policy):
        # A quarter of a millisecond of Python, which would hold the GIL on a worker thread too: the
        # hop to one cost more than the work (1 to 2 ms against 0.3 on a busy worker).
        launch = counted_launch(argv, workspace, policy)
    else:  # the first launch probes the launchers, starting processes: off the event loop
        launch = await asyncio.to_thread(counted_launch, argv, workspace, policy)
    if ready is not None:
        await ready()
    proc = await asyncio.create_subprocess_exec(
        *launch.argv,
        cwd=launch.cwd,
        env=launch.env,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await heartbeating(asyncio.wait_for(proc.communicate(stdin), timeout), beat)
    except TimeoutError:
        return Finished(None, b"", b"")
    finally:
        # Timed out or canceled: end the process's whole group, not just its first process.
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    return Finished(proc.returncode, out, err or b"")
