"""`python -m bench.sandbox_cost [--n 100] [--out FILE]`: what the sandbox adds to one shell command.

Runs run_shell's `true` through the same tool function the worker uses, unsandboxed and under each
launcher found here, interleaved so load hits every variant alike; writes the timings as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from activities.builtin_tools import KvStore, Workspace
from activities.sandbox import SandboxPolicy
from bench.machine import describe_machine
from bench.stats import summary_ms
from core.builtin.run_shell import run as run_shell

VARIANTS = {
    "off": SandboxPolicy(enabled=False),
    "bwrap": SandboxPolicy(launcher="bwrap"),
    "unshare": SandboxPolicy(launcher="unshare"),
}


async def measure(
    n: int, workspace: Path, variants: dict[str, SandboxPolicy] | None = None, command: str = "true"
) -> dict[str, Any]:
    variants = variants or {name: p for name, p in VARIANTS.items() if not p.enabled or shutil.which(p.launcher)}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for policy in variants.values():  # a first run probes the launcher; not timed
        await run_shell(Workspace(workspace, policy), KvStore({}), {"command": command}, lambda: None)
    for _ in range(n):
        for name, policy in variants.items():
            started = time.perf_counter()
            out = await run_shell(Workspace(workspace, policy), KvStore({}), {"command": command}, lambda: None)
            times[name].append(time.perf_counter() - started)
            assert out == "exit code 0\n", out
    return {name: summary_ms(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sandbox_cost")
    parser.add_argument("--n", type=int, default=100, help="commands per variant")
    parser.add_argument("--out", type=Path, default=Path("build/bench/sandbox_cost.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as workspace:
        results = asyncio.run(measure(args.n, Path(workspace)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": describe_machine(), "run_shell_true": results}, indent=2))
    for name, row in results.items():
        print(f"{name:8} p50 {row['p50_ms']:7.2f} ms  p90 {row['p90_ms']:7.2f} ms  (n={row['n']})")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
