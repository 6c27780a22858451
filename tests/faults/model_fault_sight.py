"""What a user saw of a model fault (tests/faults/model_faults.py), gathered beside the run: the
worker's log lines for failed model calls, the waits between attempts at the model server, and
the streamed reply as `watch` prints it, with any reply a reader would see twice counted.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cli.stream_printer import StreamPrinter
from storage.store import ProjectionStore
from storage.stream_events import EVENT_MESSAGE_DELTA
from tests.support.fault_models import FaultModelServer


@dataclass
class ModelFaultSight:
    """What a user saw of the fault."""

    errors: list[str] = field(default_factory=list)  # each failed model call, as the worker logged it
    first_error_after: float | None = None  # seconds from the first faulted request to the first logged failure
    retry_waits: list[float] = field(default_factory=list)  # from a faulted request to its conversation's next
    restarted_calls: int = 0  # model calls whose streamed text restarted, marked so (a later attempt)
    interrupted_streams: int = 0  # attempts that streamed text and never finished
    attempts: int = 0  # the most attempts one model call took
    watched: dict[str, str] = field(default_factory=dict)  # what `watch` printed of each conversation's stream
    failed_turns: dict[str, str] = field(default_factory=dict)  # a failed turn's reason, from its event
    shown: dict[str, tuple[int, str]] = field(default_factory=dict)  # `show`'s exit status and output, failed


class FailedModelCalls(logging.Handler):
    """The worker's log lines for failed model calls: the SDK's "Completing activity as failed",
    with the activity's error, as `python worker.py` writes them to its log."""

    def __init__(self, task_queue: str) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[tuple[float, str]] = []
        self.conversations: set[str] = set()  # whose model call failed at least once
        self._ours = f"'task_queue': '{task_queue}'"  # the run's own worker's, when several run at once

    def emit(self, record: logging.LogRecord) -> None:
        said = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None and "'call_llm'" in said and self._ours in said:
            self.seen.append((time.monotonic(), str(record.exc_info[1])))
            self.conversations.update(re.findall(r"'workflow_id': '([^']+)'", said))

    @contextlib.contextmanager
    def listening(self) -> Iterator[FailedModelCalls]:
        logger = logging.getLogger("temporalio.activity")
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)


async def deltas(store: ProjectionStore, cid: str) -> list[dict[str, Any]]:
    events, _ = await store.events(0, cid, limit=100_000)
    return [event["payload"] for event in events if event["event_type"] == EVENT_MESSAGE_DELTA]


def watched(pieces: list[dict[str, Any]]) -> str:
    """What `watch` prints of these streamed pieces (cli/stream_printer.py)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        printer = StreamPrinter()
        for piece in pieces:
            printer.show(piece)
        printer.finish()
    return printed.getvalue()


def stream_doubles(pieces: list[dict[str, Any]], recorded: list[str], sight: ModelFaultSight) -> int:
    """Replies a reader of the stream would see twice: a later attempt with no restart mark after
    an earlier one's text, a call finished twice, or finished text that is not one recorded reply."""
    doubled = 0
    by_call: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for piece in pieces:
        by_call.setdefault((piece["turn_id"], piece["call_id"]), []).append(piece)
    finished: list[str] = []
    for call in by_call.values():
        attempts = sorted({p["attempt"] for p in call})
        sight.attempts = max(sight.attempts, *attempts)
        ordered = sorted(call, key=lambda p: (p["attempt"], p["seq"]))
        texts = {a: "".join(p["text"] for p in ordered if p["attempt"] == a) for a in attempts}
        ended = [a for a in attempts if any(p.get("done") for p in call if p["attempt"] == a)]
        doubled += max(0, len(ended) - 1)
        for before, after in itertools.pairwise(attempts):
            marked = any(p.get("restarted") for p in call if p["attempt"] == after)
            sight.interrupted_streams += bool(texts[before]) and before not in ended
            doubled += bool(texts[before]) and not marked
        sight.restarted_calls += any(p.get("restarted") for p in call)
        finished += [texts[a] for a in ended]
    extra = Counter(finished) - Counter(recorded)
    return doubled + sum(extra.values())


def fill_sight(sight: ModelFaultSight, failures: FailedModelCalls, front: FaultModelServer | None) -> None:
    sight.errors = [error for _, error in failures.seen]
    if front is None:
        return
    faulted = [seen for seen in front.seen if seen.handled != "pass"]
    after = [at for at, _ in failures.seen if faulted and at >= faulted[0].at]
    if after:
        sight.first_error_after = min(after) - faulted[0].at
    for seen in faulted:
        later = [other.at for other in front.requests_of(seen.conversation) if other.at > seen.at]
        if later:
            sight.retry_waits.append(min(later) - seen.at)
