"""The S3-compatible payload store answers 503 SlowDown, then answers slowly, while decisions and
tools of conversations that keep their payloads there are in flight: the writes wait for the store
(the log says so), nothing runs twice, no result is lost, and every conversation goes on by itself
once the store answers again (tests/faults/s3_faults.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities import store_waits
from cli.errors import EXIT_OK
from payload_store.local import PayloadStoreUnavailable
from tests.faults.s3_faults import Phases, S3FaultSeen, run_s3_fault


async def test_a_store_answering_503_then_slowly_loses_and_doubles_nothing(
    env: WorkflowEnvironment, s3: Any, tmp_path: Path
) -> None:
    seen = S3FaultSeen()
    address = env.client.service_client.config.target_host
    phases: Phases = (("unavailable", 3.0), ("slow", 2.0))
    outcome = await run_s3_fault(
        tmp_path, address, s3.url, conversations=2, phases=phases, slow_answer_seconds=4.0, seen=seen
    )
    outcome.assert_clean()
    assert seen.answered["503 to a write"] > 0 and seen.answered["slow"] > 0, seen.answered  # both were met
    assert seen.cli_during is not None
    assert seen.cli_during.returncode == EXIT_OK, seen.cli_during  # a decision needs no payload store
    # What the fault refused waited for the store, and the log says so, naming it.
    assert "the payload store s3://" in seen.worker_log and "cannot be written now: " in seen.worker_log
    assert "stored after" in seen.worker_log
    assert all(len(messages) == 1 for messages in seen.tool_messages.values()), seen.tool_messages


async def test_a_write_held_longer_than_a_heartbeat_timeout_beats_and_one_refused_is_tried_again(
    monkeypatch: Any,
) -> None:
    """What the scenario's slow answers would need minutes for: a store that holds a write past a
    tool's heartbeat timeout must not cost the attempt, and a refused write is tried again."""
    monkeypatch.setattr(store_waits, "BEAT_EVERY", 0.05)
    monkeypatch.setattr(store_waits, "RETRY_EVERY", 0.01)
    tries: list[str] = []

    async def write() -> str:
        tries.append("try")
        if len(tries) == 1:
            raise PayloadStoreUnavailable("the payload store s3://bucket cannot be written now: SlowDown")
        await asyncio.sleep(0.3)  # held by a slow store
        return "stored"

    activity_env = ActivityEnvironment()
    beats: list[object] = []
    activity_env.on_heartbeat = lambda *details: beats.append(details)
    assert await activity_env.run(store_waits.when_stored, write, "a result") == "stored"
    assert len(tries) == 2 and len(beats) >= 3, (tries, beats)
