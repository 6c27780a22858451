"""The model's faults, survived: a model server that never answers, half a stream, 429s with
retry-after, the network to the model cut or stalled, and a model that refuses every attempt.
Each scenario (tests/faults/model_faults.py) runs small here, side by side with its kin on the
one dev server (each on its own worker, task queue, model server and read model); `bench` runs
them larger. After each: nothing lost, nothing doubled, nothing stuck, every approved command ran
once, and every failed attempt said why in the worker's log."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from temporalio.client import Client

from tests.faults.model_faults import (
    ModelFaultSight,
    run_model_half_stream,
    run_model_network,
    run_model_never_answers,
    run_model_rate_limited,
    run_model_refuses_every_attempt,
)
from tests.support.postgres import PostgresServer

CONVERSATIONS = 2
STREAM_BROKE_OFF = re.compile(r"LlmStreamCut: the model's stream broke off after \d+ chunks: .+")
STREAM_STALLED = re.compile(r"LlmTimeout: the model's stream stalled: nothing came for 1 s after \d+ chunks")
TIMED_OUT = "LlmTimeout: request timed out after 1 s"  # LLM_TIMEOUT_SECONDS=1


def restarted_visibly(sight: ModelFaultSight, interrupted: int = CONVERSATIONS) -> None:
    """Each conversation's retried reply shows in `watch` as a new, labelled attempt that holds the
    whole reply once; `interrupted` of them had streamed part of it before the fault."""
    assert sight.interrupted_streams >= interrupted and sight.restarted_calls >= CONVERSATIONS, sight
    for printed in sight.watched.values():
        blocks = re.split(r"^assistant \(", printed, flags=re.MULTILINE)
        restarted = [block for block in blocks if block.startswith("restarted, attempt ")]
        assert restarted and all(block.count("Here is what the tools returned") == 1 for block in restarted), printed


async def test_a_model_that_never_answers_or_a_stalled_network_times_out_and_is_retried(
    client: Client, tmp_path: Path
) -> None:
    """The model call after each approved command meets a server that takes the request and never
    answers, or a network that forwards nothing: each attempt fails after LLM_TIMEOUT_SECONDS,
    saying so, and the retry after the fault goes through."""
    never, stalled = ModelFaultSight(), ModelFaultSight()
    outcomes = await asyncio.gather(
        run_model_never_answers(client, tmp_path / "never", conversations=CONVERSATIONS, sight=never),
        run_model_network(
            client, tmp_path / "stall", conversations=CONVERSATIONS, how="stall", when="before_reply",
            chunk_delay=0.01, sight=stalled,
        ),
    )  # fmt: skip
    for outcome in outcomes:
        outcome.assert_clean()
    assert never.errors and set(never.errors) == {TIMED_OUT}, never
    assert never.first_error_after is not None and 0.9 <= never.first_error_after < 2.0, never
    assert all(wait >= 1.9 for wait in never.retry_waits), never  # the timeout, then the policy's 1 s
    assert never.attempts == 2, "retried once the server answered again"
    assert stalled.errors and set(stalled.errors) == {TIMED_OUT}, stalled


async def test_a_reply_broken_off_is_retried_shown_restarted_and_recorded_once(client: Client, tmp_path: Path) -> None:
    """Replies broken off three ways: the server closes in the middle of the tool call that
    proposes a command (nothing is asked or run from half a call: the retried call is asked once
    and runs once); the server goes silent halfway through the reply after a tool; the network is
    cut while that reply streams. `watch` shows each retry as a restarted reply, held once."""
    closed, silent, cut = ModelFaultSight(), ModelFaultSight(), ModelFaultSight()
    outcomes = await asyncio.gather(
        # A closed stream needs no client timeout to end: a long one keeps a loaded machine's slow
        # reply from adding a timeout to the errors this case must show.
        run_model_half_stream(
            client, tmp_path / "close", conversations=CONVERSATIONS, then="close", when="asking",
            timeout_seconds=10.0, sight=closed,
        ),
        run_model_half_stream(client, tmp_path / "hang", conversations=CONVERSATIONS, then="hang", sight=silent),
        run_model_network(
            client, tmp_path / "cut", conversations=CONVERSATIONS, how="cut", when="mid_stream", fault_seconds=0.8,
            sight=cut,
        ),
    )  # fmt: skip
    for outcome in outcomes:
        outcome.assert_clean()
    assert closed.errors and all(STREAM_BROKE_OFF.fullmatch(error) for error in closed.errors), closed
    assert all("incomplete chunked read" in error for error in closed.errors), closed
    assert closed.interrupted_streams >= CONVERSATIONS and closed.restarted_calls >= CONVERSATIONS, closed
    assert silent.errors and all(STREAM_STALLED.fullmatch(error) for error in silent.errors), silent
    restarted_visibly(silent)
    broke_off = [error for error in cut.errors if STREAM_BROKE_OFF.fullmatch(error)]
    assert broke_off and all(error.endswith("Connection reset by peer") for error in broke_off), cut
    unreachable = [error for error in cut.errors if error not in broke_off]
    assert all(error.startswith("LlmUnreachable: ") and not error.endswith(": ") for error in unreachable), cut
    restarted_visibly(cut, interrupted=1)  # the cut waits for both to stream: one may just have ended


async def test_a_429_waits_as_asked_and_one_that_never_ends_fails_the_turn_closed(
    client: Client, tmp_path: Path
) -> None:
    """Two conversations are refused once: one told `retry-after: 2`, the other `retry-after-ms:
    1500` beside `retry-after: 9` (the finer one wins); the retry policy alone would wait 1 s.
    A third is refused on every attempt until the retry policy gives up: its turn fails with the
    server's reason, nothing is asked or run, `show` prints the reason; its next message goes on."""
    limited, refused = ModelFaultSight(), ModelFaultSight()
    outcomes = await asyncio.gather(
        run_model_rate_limited(client, tmp_path / "limited", conversations=CONVERSATIONS, sight=limited),
        run_model_refuses_every_attempt(client, tmp_path / "refused", conversations=1, sight=refused),
    )
    for outcome in outcomes:
        outcome.assert_clean()
    said = "HTTP 429 from the model server: rate limit reached, slow down"
    assert set(limited.errors) == {f"LlmRateLimited: {said}"}, limited
    millis, seconds = sorted(limited.retry_waits)
    assert 1.5 <= millis < 2.0 <= seconds < 3.0, limited  # retry-after-ms: 1500, then retry-after: 2
    [(conversation_id, reason)] = refused.failed_turns.items()
    assert reason == f"model call failed: LlmRateLimited: {said}", refused
    status, printed = refused.shown[conversation_id]
    assert status == 0 and f"Conversation {conversation_id}: failed" in printed, printed
    assert f"last error: {reason}" in printed, printed
    assert len(refused.errors) == 6 and set(refused.errors) == {f"LlmRateLimited: {said}"}, refused


async def test_a_stream_cut_with_the_read_model_on_postgresql_is_restarted_and_recorded_once(
    client: Client, tmp_path: Path, postgres: PostgresServer
) -> None:
    """The network to the model cut while replies stream into a read model on PostgreSQL (its
    deltas are written there, NOTIFY wakes the readers): the same outcome as on SQLite."""
    cut = ModelFaultSight()
    outcome = await run_model_network(
        client, tmp_path / "cut", conversations=CONVERSATIONS, how="cut", when="mid_stream", fault_seconds=0.8,
        database=postgres.new_database(), sight=cut,
    )  # fmt: skip
    outcome.assert_clean()
    assert outcome.backend == "postgresql", outcome
    assert any(STREAM_BROKE_OFF.fullmatch(error) for error in cut.errors), cut
    restarted_visibly(cut, interrupted=1)
