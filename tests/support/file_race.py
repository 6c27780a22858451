"""A worker-like process that calls one file tool many times while a link under it flips.

Run as `python -m tests.support.file_race TOOL COUNT WORKSPACE OUTSIDE LAUNCHER`, with a secret in its
own environment: a process flips `race/f` (read_file) or `race/w` (write_file) between a regular
file and a symlink (to /proc/self/environ, or to OUTSIDE), as an approved command could. It
prints one JSON line: every result the tool gave. The test reads them for the secret and looks
at OUTSIDE. It is a separate process because /proc/self/environ is the environment a process
started with, which is what a worker's secrets are.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from activities.builtin_tools import BUILTIN_TOOLS, KvStore, Workspace
from activities.sandbox import SandboxPolicy

# The approved command: flips the name as fast as it can, each state atomically (rename over it).
FLIPPER = r"""
import os, sys, time
link, target = sys.argv[1:3]
spare = link + ".new"
while True:
    for link_it in (False, True):
        try:
            os.unlink(spare)
        except FileNotFoundError:
            pass
        if link_it:
            os.symlink(target, spare)
        else:
            with open(spare, "w") as f:
                f.write("plain file\\n")
        os.replace(spare, link)
        time.sleep(0.0001 if link_it else 0.001)  # long enough as a file to pass a check by name
"""


async def race(tool: str, count: int, workspace: Path, outside: Path, launcher: str) -> list[str]:
    policy = SandboxPolicy(enabled=launcher != "off", launcher="auto" if launcher == "off" else launcher)
    ws = Workspace(workspace, policy)
    (workspace / "race").mkdir(parents=True, exist_ok=True)
    name = "f" if tool == "read_file" else "w"
    target = "/proc/self/environ" if tool == "read_file" else str(outside)
    link = workspace / "race" / name
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(link), target])
    while not link.is_symlink():  # flipping already when the first call comes
        time.sleep(0.01)
    results = []
    try:
        for n in range(count):
            args = {"path": f"race/{name}"} if tool == "read_file" else {"path": f"race/{name}", "content": f"w{n}"}
            try:
                results.append(await BUILTIN_TOOLS[tool](ws, KvStore({}), args, lambda: None))
            except (ValueError, OSError) as err:  # refused or failed: the activity reports these
                results.append(f"Error: {err}")
    finally:
        flipper.kill()
        flipper.wait()
    return results


def main() -> None:
    tool, count, workspace, outside, launcher = sys.argv[1:6]
    results = asyncio.run(race(tool, int(count), Path(workspace), Path(outside), launcher))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
