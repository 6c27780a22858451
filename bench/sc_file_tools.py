"""Scenario: what confining the built-in file tools costs, one call at a time, in one run.

read_file and write_file of a 4 KiB text file through the tool functions the worker calls: in
a sandbox process per call (bubblewrap, util-linux unshare), in the worker below a directory
handle with links refused (the sandbox turned off), and as they ran before they were confined
(the path checked, then opened again by name on the event loop). The variants alternate call by
call, so load falls on each alike. No Temporal: the activity around the tool is the same for all.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from activities.builtin_tools import BUILTIN_TOOLS, KvStore
from activities.sandbox import SandboxPolicy
from activities.workspaces import Workspace
from bench.harness import Bench, say
from bench.stats import summary_ms

CONTENT = ("a line of plain text for the file tools bench\n" * 100)[:4096]
VARIANTS = {
    "bwrap": SandboxPolicy(launcher="bwrap"),
    "unshare": SandboxPolicy(launcher="unshare"),
    "in_process": SandboxPolicy(enabled=False),
}


async def _unconfined_read(ws: Workspace, path: str) -> str:
    """read_file as it was: a check by name, then the worker opens the name again."""
    return ws.resolve(path).read_text(errors="replace")


async def _unconfined_write(ws: Workspace, path: str, content: str) -> str:
    target = ws.resolve(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode()
    target.write_bytes(data)
    return f"Wrote {len(data)} bytes to {path}"


def _calls(ws: Workspace, confined: bool) -> dict[str, Callable[[], Awaitable[str]]]:
    kv, beat = KvStore({}), lambda: None
    write_args = {"path": "notes/out.txt", "content": CONTENT}
    if not confined:
        return {
            "read_file": lambda: _unconfined_read(ws, "notes/in.txt"),
            "write_file": lambda: _unconfined_write(ws, "notes/out.txt", CONTENT),
        }
    return {
        "read_file": lambda: BUILTIN_TOOLS["read_file"](ws, kv, {"path": "notes/in.txt"}, beat),
        "write_file": lambda: BUILTIN_TOOLS["write_file"](ws, kv, write_args, beat),
    }


async def run(bench: Bench, count: int) -> dict[str, Any]:
    root = bench.root / "file_tools"
    variants: dict[str, dict[str, Callable[[], Awaitable[str]]]] = {}
    for name, policy in VARIANTS.items():
        if policy.enabled and shutil.which(policy.launcher) is None:
            say(f"file_tools: {policy.launcher} not found, skipped")
            continue
        variants[name] = _calls(_workspace(root / name, policy), confined=True)
    variants["before"] = _calls(_workspace(root / "before", SandboxPolicy(enabled=False)), confined=False)
    expected = {"read_file": CONTENT, "write_file": f"Wrote {len(CONTENT.encode())} bytes to notes/out.txt"}
    times: dict[str, dict[str, list[float]]] = {v: {"read_file": [], "write_file": []} for v in variants}
    wrong = 0
    for calls in variants.values():  # a first call probes the launcher; not timed
        for tool in expected:
            await calls[tool]()
    for _ in range(count):
        for variant, calls in variants.items():
            for tool, call in calls.items():
                started = time.perf_counter()
                result = await call()
                times[variant][tool].append(time.perf_counter() - started)
                wrong += result != expected[tool]
    bench.check("file_tools: every call returned the file or the write", 0, wrong)
    out: dict[str, Any] = {"calls_each": count, "file_bytes": len(CONTENT)}
    for variant in variants:
        out[variant] = {tool: summary_ms(values) for tool, values in times[variant].items()}
    for variant in variants:
        if variant != "before":
            out[f"{variant}_over_before_p50"] = {
                tool: round(out[variant][tool]["p50_ms"] / max(out["before"][tool]["p50_ms"], 1e-6), 1)
                for tool in expected
            }
    return out


def _workspace(path: Path, policy: SandboxPolicy) -> Workspace:
    (path / "notes").mkdir(parents=True, exist_ok=True)
    (path / "notes" / "in.txt").write_text(CONTENT)
    return Workspace(path, policy)
