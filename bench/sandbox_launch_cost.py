"""`python3 bench/sandbox_launch_cost.py CHECKOUT [CHECKOUT ...] [--n 50]`: one sandboxed `true`, per
launcher, as the sandbox of each checkout builds it.

Starts `true` through `activities.sandbox.sandboxed_launch` of every checkout named (each in a
child interpreter, so two versions of the module can be compared), alternating checkouts batch by
batch so load hits them alike, and prints p50/p90 per checkout and launcher. It uses the standard
library only, so it also runs with the system's Python as an unprivileged user.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, subprocess, sys, tempfile, time
from pathlib import Path
from activities.sandbox import SandboxPolicy, sandboxed_launch
n, launcher = int(sys.argv[1]), sys.argv[2]
with tempfile.TemporaryDirectory(prefix="launch-cost-") as ws:
    policy = SandboxPolicy(launcher=launcher)
    sandboxed_launch(["true"], Path(ws), policy)  # the first launch probes the launcher; not timed
    times = []
    for _ in range(n):
        started = time.perf_counter()
        launch = sandboxed_launch(["true"], Path(ws), policy)
        subprocess.run(launch.argv, env=launch.env, cwd=launch.cwd, check=True)
        times.append(time.perf_counter() - started)
print(json.dumps(times))
"""


def batch(checkout: str, launcher: str, n: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": checkout, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), launcher], env=env, capture_output=True, text=True, check=True
    )
    times: list[float] = json.loads(out.stdout)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/sandbox_launch_cost.py")
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--n", type=int, default=50, help="launches per checkout and launcher")
    parser.add_argument("--batches", type=int, default=5)
    args = parser.parse_args()
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.batches):
        for launcher in ("bwrap", "unshare"):
            for checkout in args.checkouts:
                times.setdefault((checkout, launcher), []).extend(batch(checkout, launcher, args.n // args.batches))
    print(f"euid {os.geteuid()}")
    for (checkout, launcher), values in times.items():
        ms = sorted(v * 1000 for v in values)
        p90 = ms[int(0.9 * (len(ms) - 1))]
        print(f"{checkout:24} {launcher:8} p50 {statistics.median(ms):7.2f} ms  p90 {p90:7.2f} ms  (n={len(ms)})")


if __name__ == "__main__":
    main()
