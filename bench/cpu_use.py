"""CPU seconds a drain's processes used, read from /proc: what bounds a drain on a machine whose two
cores it fills, and so what a drain rate over the floor's can reach."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from bench.harness import Bench


def _used(process: psutil.Process) -> float:
    """The process's CPU time with that of its children it has waited for (the tools' processes)."""
    times = process.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def _seconds(pid: int, running_children: bool = False) -> float:
    """`pid`'s CPU time (0 once it is gone); `running_children`: with that of the processes it runs
    now (PostgreSQL's backends), each counted while it still runs."""
    try:
        process = psutil.Process(pid)
        used = _used(process)
        children = process.children(recursive=True) if running_children else []
    except psutil.NoSuchProcess:
        return 0.0
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            used += _used(child)
    return used


def cpu_seconds(bench: Bench) -> dict[str, float]:
    """Now, per part: the Temporal dev server, PostgreSQL (once a scenario started it), the running
    workers, and this process (the doors sending the decisions, and the scripted model)."""
    server, postgres = bench.server.proc, bench.postgres_pid()
    workers = [w.proc.pid for w in bench.workers if w.proc.poll() is None]
    return {
        "temporal": _seconds(server.pid) if server is not None else 0.0,
        "postgresql": _seconds(postgres, running_children=True) if postgres is not None else 0.0,
        "workers": sum(_seconds(pid) for pid in workers),
        "bench": _seconds(os.getpid()),
    }


def ms_per_approval(before: dict[str, float], after: dict[str, float], approvals: int) -> dict[str, float]:
    """CPU milliseconds per approval between two readings taken with the same workers running."""
    used = {part: (after[part] - before[part]) * 1000 / approvals for part in before}
    return {**{part: round(ms, 1) for part, ms in used.items()}, "total": round(sum(used.values()), 1)}
