"""Scenario 4: history growth over a long conversation with tool calls in every turn.

Each turn: a user message, the model asks for `read_file` of a 4 KiB source file (allowed) and
`run_shell` (asked), a person approves, the tools run, the model answers. The transcript grows by
the file every turn; payloads over PAYLOAD_STORE_THRESHOLD go to the payload store, so the history
holds a reference instead of the growing transcript. Afterwards every run of the chain is read back (following
continue-as-new links) and each history event is attributed to the turn during which it was
written: a turn starts at its submit_message signal (turn 1 at the workflow start).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from activities.workspaces import workspace_for
from bench import script
from bench.drive import approve, new_ids, scalar
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import median
from config.settings import Settings
from core.compaction import is_summary_request
from core.contract import SIGNAL_SUBMIT_MESSAGE, WORKFLOW_TYPE
from core.conversation_model import ConversationInput, MessageInput
from payload_store.blob_tree import dumps
from payload_store.history import payload_sizes

PENDING_SQL = (
    "SELECT request_id FROM ui_pending_approvals WHERE conversation_id = ? AND turn_id = ? AND resolved_at IS NULL"
)
DONE_SQL = "SELECT count(*) FROM ui_events WHERE event_key = ?"


def tag(cid: str, turn: int) -> str:
    return f"{cid}.t{turn}"


async def _wait(check: Any, what: str, timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.01)


async def chain(client: Client, cid: str) -> list[WorkflowHistory]:
    """Every run of the conversation, oldest first, by following continue-as-new links back."""
    runs = [await client.get_workflow_handle(cid).fetch_history()]
    while True:
        first = runs[0].events[0].workflow_execution_started_event_attributes
        if not first.continued_execution_run_id:
            return runs
        runs.insert(0, await client.get_workflow_handle(cid, run_id=first.continued_execution_run_id).fetch_history())


def _store_files(settings: Settings) -> set[Path]:
    return {p for p in Path(settings.payload_store_location).rglob("*") if p.is_file()}


class StoreGrowth:
    """Bytes the payload store gained since the last look (only new names are stat'ed)."""

    def __init__(self, settings: Settings) -> None:
        self.root = Path(settings.payload_store_location)
        self.seen: set[str] = set()
        self.added()

    def added(self) -> int:
        grown = 0
        for directory, _, names in os.walk(self.root):
            for name in names:
                path = os.path.join(directory, name)
                if name.startswith(".") or path in self.seen:
                    continue
                self.seen.add(path)
                with contextlib.suppress(FileNotFoundError):
                    grown += os.stat(path).st_size
        return grown


def transcript_bytes(requests: list[dict[str, Any]]) -> int:
    """The conversation's own bytes, each turn's counted once: the user's message, the model's tool
    calls and the results (the tail of the call after the results), and the previous answer."""
    said = 0
    for body in requests:
        messages = body["messages"]
        if is_summary_request(messages) or not messages:
            continue
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        if messages[-1]["role"] == "tool" and users:
            said += sum(len(dumps(m)) for m in messages[users[-1] :])
        elif messages[-1]["role"] == "user" and len(messages) > 1 and messages[-2]["role"] == "assistant":
            said += len(dumps(messages[-2]))
    return said


def per_turn(runs: list[WorkflowHistory], turns: int) -> tuple[list[dict[str, Any]], list[int]]:
    rows = [
        {"turn": t, "events": 0, "bytes": 0, "external_bytes": 0, "largest_inline_payload": 0}
        for t in range(1, turns + 1)
    ]
    continued_after: list[int] = []
    turn = 1
    for history in runs:
        for event in history.events:
            if (
                event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
                and event.workflow_execution_signaled_event_attributes.signal_name == SIGNAL_SUBMIT_MESSAGE
            ):
                turn += 1
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                continued_after.append(turn)
            row = rows[min(turn, turns) - 1]
            row["events"] += 1
            row["bytes"] += event.ByteSize()
            sizes = payload_sizes(event)
            row["external_bytes"] += sum(sizes.external)
            row["largest_inline_payload"] = max([row["largest_inline_payload"], *sizes.inline])
    return rows, continued_after


def _mean_kib(values: list[int]) -> float:
    return round(sum(values) / max(len(values), 1) / 1024, 2)


def store_flatness(rows: list[dict[str, Any]], decile: int) -> dict[str, Any]:
    """The store's bytes per turn, every byte counted (means, not medians), compared fairly.

    Below PAYLOAD_STORE_THRESHOLD a model call's messages stay inline, so the first turns store
    nothing and the plain first tenth compares an inline start with a stored end. Here the first
    tenth starts at the first turn that stored anything; the turns after it that stored nothing
    (a compacted transcript back under the threshold) stay in, in both tenths alike. The bytes
    written per turn (history events plus the store) are given as well, inline turns included.
    """
    stored_from = next((i for i, row in enumerate(rows) if row["store_bytes"] > 0), 0)
    first = [r["store_bytes"] for r in rows[stored_from : stored_from + decile]]
    last = [r["store_bytes"] for r in rows[-decile:]]
    written_first = [r["store_bytes"] + r["bytes"] for r in rows[:decile]]
    written_last = [r["store_bytes"] + r["bytes"] for r in rows[-decile:]]
    return {
        "store_first_turn_stored": stored_from + 1,
        "store_kib_per_turn_first_stored_decile_mean": _mean_kib(first),
        "store_kib_per_turn_last_decile_mean": _mean_kib(last),
        "store_bytes_per_turn_last_over_first": round(sum(last) / max(sum(first), 1) * len(first) / len(last), 2),
        "written_kib_per_turn_first_decile_mean": _mean_kib(written_first),
        "written_kib_per_turn_last_decile_mean": _mean_kib(written_last),
        "written_bytes_per_turn_last_over_first": round(sum(written_last) / max(sum(written_first), 1), 2),
    }


async def run(
    bench: Bench, turns: int, payload_threshold: int | None = None, context_budget: int | None = None
) -> dict[str, Any]:
    """context_budget: the conversation's CONTEXT_BUDGET_TOKENS (None: the default for the model, so
    older turns are compacted; a huge one sends the whole transcript with every model call)."""
    settings = bench.settings("history", payload_threshold)
    if context_budget is not None:
        settings = dataclasses.replace(settings, context_budget_tokens=context_budget)
    summaries_before = script.summary_requests(bench.model)
    files_before = _store_files(settings)
    label = "history" if context_budget is None else "history_full_transcript"
    label += "_all_stored" if payload_threshold == 0 else ""
    bench.start_worker(settings, "ours", DEFAULT_CACHE)
    cid = new_ids(script.READ_PREFIX.rstrip("-"), 1)[0]
    files = workspace_for(settings.workspace_dir, cid)  # the conversation's own workspace
    files.mkdir(parents=True, exist_ok=True)
    (files / script.READ_FILE).write_text(script.source_text())
    limit = 500 if turns >= 50 else 150
    start = ConversationInput(
        conversation_id=cid,
        policy=settings.load_policy(),
        approval_timeout_seconds=settings.approval_timeout,
        inbox=[script.user_text(tag(cid, 1))],
        continue_as_new_after_events=limit,
        context_budget_tokens=settings.context_budget_tokens,
    )
    await bench.client.start_workflow(WORKFLOW_TYPE, start, id=cid, task_queue=settings.task_queue)
    db = settings.approvals_db
    seconds: list[float] = []
    requests_before = len(bench.model.requests)
    growth = StoreGrowth(settings)
    stored_per_turn: list[int] = []
    for k in range(1, turns + 1):
        t0 = time.monotonic()
        if k > 1:
            await bench.client.get_workflow_handle(cid).signal(
                SIGNAL_SUBMIT_MESSAGE, MessageInput(text=script.user_text(tag(cid, k)))
            )
        request_id = await _wait(lambda k=k: scalar(db, PENDING_SQL, cid, f"turn_{k}"), f"turn {k} approval")
        await approve(bench.client, settings, request_id)
        await _wait(lambda k=k: scalar(db, DONE_SQL, f"{cid}:turn_{k}:turn.completed"), f"turn {k} completed")
        seconds.append(time.monotonic() - t0)
        stored_per_turn.append(growth.added())
        if k % 20 == 0:
            say(f"{label}: {k}/{turns} turns")
    runs = await chain(bench.client, cid)
    bench.stop_workers()
    rows, continued_after = per_turn(runs, turns)
    for row, spent, added in zip(rows, seconds, stored_per_turn, strict=True):
        row["seconds"] = round(spent, 3)
        row["store_bytes"] = added
    said = transcript_bytes(bench.model.requests[requests_before:])
    ran = ran_counts(settings)
    bench.check(
        f"{label}: one tool run per turn", turns, sum(1 for k in range(1, turns + 1) if ran.get(tag(cid, k)) == 1)
    )
    asked = script.requests_per_tag(bench.model)
    bench.check(
        f"{label}: model asked twice per turn", turns, sum(asked[tag(cid, k)] == 2 for k in range(1, turns + 1))
    )
    decile = max(1, turns // 10)
    first, last = rows[:decile], rows[-decile:]
    stored = _store_files(settings) - files_before  # the run's store is shared by every scenario
    summary = {
        "turns": turns,
        "context_budget_tokens": settings.context_budget_tokens,
        "summarise_requests": script.summary_requests(bench.model) - summaries_before,
        "payload_store_threshold": settings.payload_store_threshold,
        "tool_output_bytes_per_turn": len(script.source_text()),
        "continue_as_new_after_events": limit,
        "continued_as_new_after_turns": continued_after,
        "runs": len(runs),
        "largest_run_events": max(len(h.events) for h in runs),
        "largest_run_kib": round(max(sum(e.ByteSize() for e in h.events) for h in runs) / 1024, 1),
        "events_per_turn_first_decile": median([r["events"] for r in first]),
        "events_per_turn_last_decile": median([r["events"] for r in last]),
        "kib_per_turn_first_decile": round(median([r["bytes"] for r in first]) / 1024, 1),
        "kib_per_turn_last_decile": round(median([r["bytes"] for r in last]) / 1024, 1),
        "external_kib_per_turn_first_decile": round(median([r["external_bytes"] for r in first]) / 1024, 1),
        "external_kib_per_turn_last_decile": round(median([r["external_bytes"] for r in last]) / 1024, 1),
        "largest_inline_payload_bytes": max(r["largest_inline_payload"] for r in rows),
        "payload_store_files": len(stored),
        "payload_store_mib": round(sum(p.stat().st_size for p in stored) / 2**20, 1),
        "transcript_kib": round(said / 1024, 1),
        "store_bytes_per_transcript_byte": round(sum(p.stat().st_size for p in stored) / max(said, 1), 2),
        "store_kib_per_turn_first_decile": round(median([r["store_bytes"] for r in first]) / 1024, 1),
        "store_kib_per_turn_last_decile": round(median([r["store_bytes"] for r in last]) / 1024, 1),
        "seconds_per_turn_first_decile": round(median([r["seconds"] for r in first]), 3),
        "seconds_per_turn_last_decile": round(median([r["seconds"] for r in last]), 3),
        "per_turn": rows,
    }
    summary["store_per_turn_last_over_first"] = round(
        summary["store_kib_per_turn_last_decile"] / max(summary["store_kib_per_turn_first_decile"], 0.1), 2
    )
    summary.update(store_flatness(rows, decile))
    bench.check(
        f"{label}: no payload in history at or over the threshold",
        True,
        summary["largest_inline_payload_bytes"] < max(settings.payload_store_threshold, 4096),
    )
    say(
        f"{label}: events/turn {summary['events_per_turn_first_decile']} -> {summary['events_per_turn_last_decile']},"
        f" KiB/turn {summary['kib_per_turn_first_decile']} -> {summary['kib_per_turn_last_decile']},"
        f" stored KiB/turn {summary['external_kib_per_turn_first_decile']}"
        f" -> {summary['external_kib_per_turn_last_decile']},"
        f" continue-as-new after turns {continued_after};"
        f" store {summary['store_bytes_per_transcript_byte']} bytes per transcript byte,"
        f" store KiB/turn {summary['store_kib_per_turn_first_decile']} -> {summary['store_kib_per_turn_last_decile']}"
        f" (means from the first stored turn: {summary['store_kib_per_turn_first_stored_decile_mean']}"
        f" -> {summary['store_kib_per_turn_last_decile_mean']}, {summary['store_bytes_per_turn_last_over_first']}x)"
    )
    return summary
