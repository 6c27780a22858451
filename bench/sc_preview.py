"""Scenario: what the effect preview adds between the model's reply and the card, for a 100 KB file.

Each conversation's model asks to overwrite a 102,000-byte file of its workspace, changing one
line. Latency = from the model's reply recorded in history (call_llm's ActivityTaskCompleted) to
the pending row written to the read model (project_approval_requested's ActivityTaskCompleted):
the moment the card can be shown, with its diff. "with" is this tree's worker (the preview reads
the file and diffs it before the row is written); "without" is the same tree (its last commit)
with previews switched off in an exported copy (Previewer.enabled answers False), so the two
differ by the preview alone, payload store and all. The two alternate one conversation at a
time; every request is then denied.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from activities.workspaces import workspace_for
from bench import script
from bench.drive import activity_completed_at, new_ids, pending_requests, start_all, wait_idle, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, say
from bench.stats import summary_ms
from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision
from workflows.activity_calls import CALL_LLM, PROJECT_APPROVAL_REQUESTED


def previews_off(root: Path) -> Path:
    """This tree's last commit, exported, with previews switched off and nothing else changed."""
    from bench.run import export_revision

    tree = export_revision("HEAD", root / "previews-off")
    module = tree / "workflows" / "previewing.py"
    switch = "        return workflow.patched(patches.EFFECT_PREVIEW)\n"
    text = module.read_text()
    if text.count(switch) != 1:
        raise RuntimeError(f"{module}: the preview switch is not where this scenario turns it off")
    module.write_text(text.replace(switch, "        return False\n"))
    return tree


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
    bench.start_worker(phases["without"], "ours", DEFAULT_CACHE, checkout=bench.baseline or previews_off(bench.root))
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
