"""Scenario: what the effect preview adds between the model's reply and the card, for a 100 KB file.

Each conversation's model asks to overwrite a 102,000-byte file of its workspace, changing one
line. Latency = from the model's reply recorded in history (call_llm's ActivityTaskCompleted) to
the pending row written to the read model (project_approval_requested's ActivityTaskCompleted):
the moment the card can be shown. "with" is this tree's worker (the preview activity reads the
file in the sandbox and diffs it); "without" is the worker of the revision before previews,
exported from git. The two alternate one conversation at a time; every request is then denied.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

from activities.workspaces import workspace_for
from bench import script
from bench.drive import activity_completed_at, new_ids, pending_requests, start_all, wait_idle, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, say
from bench.stats import summary_ms
from config.settings import Settings
from core.models import DecisionInput
from doors.control import send_decision
from workflows.activity_calls import CALL_LLM, PROJECT_APPROVAL_REQUESTED

HERE = Path(__file__).resolve().parent


def before_previews(root: Path) -> Path:
    """The source tree of the commit before previews were added (the parent of core/previews.py's first commit)."""
    from bench.run import export_revision

    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "core/previews.py"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return export_revision(f"{added[-1]}^", root / "before-previews")


def _seed(settings: Settings, ids: list[str]) -> None:
    for cid in ids:
        workspace = workspace_for(settings.workspace_dir, cid)
        workspace.mkdir(parents=True, exist_ok=True)
        (workspace / script.PREVIEW_FILE).write_text(script.preview_file_text())


async def _latency(bench: Bench, cid: str) -> float:
    """The row is written by the activity a moment before its completion is in history: wait for both."""
    for _ in range(500):
        history = await bench.client.get_workflow_handle(cid).fetch_history()
        replied = activity_completed_at(history, CALL_LLM)
        shown = activity_completed_at(history, PROJECT_APPROVAL_REQUESTED)
        if replied and shown:
            return shown[0] - replied[0]
        await asyncio.sleep(0.02)
    raise RuntimeError(f"{cid}: no card recorded in history")


async def run(bench: Bench, count: int) -> dict[str, Any]:
    phases = {"with": bench.settings("preview-with"), "without": bench.settings("preview-without")}
    bench.start_worker(phases["with"], "ours", DEFAULT_CACHE)
    bench.start_worker(phases["without"], "ours", DEFAULT_CACHE, checkout=bench.baseline or before_previews(bench.root))
    seconds: dict[str, list[float]] = {"with": [], "without": []}
    for i in range(count):
        for kind, settings in phases.items():
            [cid] = new_ids(f"{script.PREVIEW_PREFIX}{kind}-{i}", 1)
            _seed(settings, [cid])
            await start_all(bench.client, settings, [cid])
            await wait_pending(settings.approvals_db, i + 1)
            seconds[kind].append(await _latency(bench, cid))
    for kind, settings in phases.items():
        for request_id in pending_requests(settings.approvals_db).values():
            deny = DecisionInput(request_id=request_id, decision="deny", decided_by="bench")
            await send_decision(bench.client, settings, deny)
        await wait_idle(settings.approvals_db, count)
        rows = pending_requests(settings.approvals_db)
        bench.check(f"preview: every {kind} request was decided", 0, len(rows))
    bench.stop_workers()
    ours, theirs = summary_ms(seconds["with"]), summary_ms(seconds["without"])
    added = round(ours["p50_ms"] - theirs["p50_ms"], 1)
    say(f"preview: with p50 {ours['p50_ms']} ms, without p50 {theirs['p50_ms']} ms, added {added} ms")
    return {
        "with_preview": ours,
        "without_preview": theirs,
        "added_p50_ms": added,
        "file_bytes": len(script.preview_file_text()),
    }
