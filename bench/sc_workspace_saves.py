"""Scenario: what saving a workspace to the payload store costs, and what a one-line edit adds.

A 50 MiB workspace of text files (one of 2 MiB, the rest spread from 100 bytes to 256 KiB) is saved
once (every chunk new), again unchanged, and again after each of `count` one-line edits, one file
each (every fourth in the 2 MiB file), as a tool that writes would leave it. A 5 MiB workspace, the
first files of the same list, takes the same edits in the same files: what an edit writes should
not grow with the workspace. The files are dated an hour back before the first save, as most of a
workspace's files are when a tool ends (a file changed within two seconds of a save is read again
by the next). Then the 50 MiB save is restored on a "new host" (an empty directory). No Temporal:
WorkspaceSaves over the local store.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from activities.workspace_saves import WorkspaceSaves
from bench.harness import Bench, say
from bench.stats import median
from payload_store.workspace_store import LocalWorkspaceStore

MIB = 2**20
SIZES = {"workspace_50_mib": 50 * MIB, "workspace_5_mib": 5 * MIB}


BIG_FILE = ("data/big-fixture.txt", 2 * MIB)


def plan_files(total: int, seed: int = 11) -> list[tuple[str, int]]:
    """(relative path, size) of text files adding up to `total`: one of 2 MiB first, then sizes
    log-uniform in 100 B .. 256 KiB (about 33 KiB on average)."""
    rng = random.Random(seed)
    files: list[tuple[str, int]] = [BIG_FILE]
    used = BIG_FILE[1]
    while used < total:
        size = min(int(100 * (256 * 1024 / 100) ** rng.random()), total - used)
        files.append((f"pkg{len(files) % 17}/mod{len(files) // 17}/file{len(files)}.py", size))
        used += size
    return files


def text_of(path: str, size: int, pool: list[str], rng: random.Random) -> bytes:
    lines = [f"# {path}\n"]
    held = len(lines[0])
    while held < size:
        line = f"{len(lines)} {rng.choice(pool)}"
        lines.append(line)
        held += len(line)
    return "".join(lines).encode()[:size]


def build(root: Path, files: list[tuple[str, int]]) -> None:
    rng = random.Random(5)
    words = [f"name{i}" for i in range(4000)]
    pool = [" ".join(rng.choices(words, k=rng.randint(0, 12))) + "\n" for _ in range(20_000)]
    an_hour_ago = time.time() - 3600
    for path, size in files:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text_of(path, size, pool, random.Random(path)))
        os.utime(target, (an_hour_ago, an_hour_ago))


def edit_one_line(root: Path, path: str, k: int) -> None:
    target = root / path
    lines = target.read_bytes().split(b"\n")
    lines[len(lines) // 2] = f"an edited line, edit {k}".encode()
    target.write_bytes(b"\n".join(lines))


async def timed_save(saves: WorkspaceSaves, root: Path) -> tuple[int, float]:
    started = time.perf_counter()
    saved = await saves.save(root.name, root)
    assert saved.skipped is None, saved.skipped
    return saved.written_bytes, time.perf_counter() - started


async def measure(bench: Bench, label: str, files: list[tuple[str, int]], edits: list[str]) -> dict[str, Any]:
    home = bench.root / "workspace_saves" / label
    workspace = home / "conversations" / label
    build(workspace, files)
    saves = WorkspaceSaves(LocalWorkspaceStore(home / "store"))
    first_bytes, first_seconds = await timed_save(saves, workspace)
    unchanged_bytes, unchanged_seconds = await timed_save(saves, workspace)
    edit_bytes, edit_seconds, each = [], [], []
    for k, path in enumerate(edits):
        edit_one_line(workspace, path, k)
        written, seconds = await timed_save(saves, workspace)
        edit_bytes.append(written)
        edit_seconds.append(seconds)
        each.append({"file_bytes": dict(files)[path], "bytes_written": written, "seconds": round(seconds, 4)})
    per_tool = median(edit_bytes)
    out: dict[str, Any] = {
        "files": len(files),
        "workspace_bytes": sum(size for _, size in files),
        "first_save": {"bytes_written": first_bytes, "seconds": round(first_seconds, 3)},
        "unchanged_save": {"bytes_written": unchanged_bytes, "seconds": round(unchanged_seconds, 3)},
        "edit_save": {
            "edits": len(edits),
            "edited_file_bytes_p50": median([float(dict(files)[path]) for path in edits]),
            "bytes_written_per_tool": per_tool,
            "bytes_written_max": max(edit_bytes),
            "seconds_p50": round(median(edit_seconds), 4),
            "seconds_max": round(max(edit_seconds), 4),
            "each": each,
        },
        "edit_over_first_save": round(per_tool / first_bytes, 5),
    }
    bench.check(f"workspace_saves: {label} unchanged save wrote nothing", 0, unchanged_bytes)
    if label == "workspace_50_mib":
        new_host = home / "new-host" / label
        started = time.perf_counter()
        restored = await saves.restore(label, new_host)
        seconds = time.perf_counter() - started
        assert restored is not None
        out["restore_on_new_host"] = {"bytes_written": restored.written_bytes, "seconds": round(seconds, 3)}
        same = all((new_host / p).read_bytes() == (workspace / p).read_bytes() for p, _ in files)
        bench.check(f"workspace_saves: {label} restored byte for byte", True, same)
    say(
        f"workspace_saves {label}: first save {first_bytes / MIB:.1f} MiB in {first_seconds:.2f}s, unchanged"
        f" {unchanged_seconds * 1000:.0f} ms, one-line edit {per_tool / 1024:.1f} KiB in"
        f" {median(edit_seconds) * 1000:.0f} ms"
    )
    return out


async def run(bench: Bench, count: int) -> dict[str, Any]:
    big = plan_files(SIZES["workspace_50_mib"])
    small, held = [], 0
    for path, size in big:  # the first files of the same list: the edited files are the same in both
        if held + size > SIZES["workspace_5_mib"]:
            break
        small.append((path, size))
        held += size
    rng = random.Random(29)
    edits = [BIG_FILE[0] if k % 4 == 0 else rng.choice(small[1:])[0] for k in range(count)]
    out: dict[str, Any] = {
        label: await measure(bench, label, big if label == "workspace_50_mib" else small, edits) for label in SIZES
    }
    out["edit_bytes_50_mib_over_5_mib"] = round(
        out["workspace_50_mib"]["edit_save"]["bytes_written_per_tool"]
        / max(out["workspace_5_mib"]["edit_save"]["bytes_written_per_tool"], 1),
        3,
    )
    return out
