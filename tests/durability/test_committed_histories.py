"""Histories recorded by earlier releases replay on today's code.

Conversations wait for days across deploys: a worker running new code must rebuild every waiting
or running conversation from the history the old code wrote. Each file under tests/histories/ is
one such history (finished, waiting for a person, continued as new, expired), named by what it
records; a change of the workflow's commands that is not behind `workflow.patched` fails here with
a non-determinism error. It replays under the workflow id its name carries (tests/support/histories.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from config.settings import Settings
from payload_store import data_converter
from payload_store.history import references
from tests.support.histories import HISTORY_DIR, PAYLOADS, committed_histories, history_path, workflow_id
from worker import replayer

HISTORIES = committed_histories()
NAMES = [path.relative_to(HISTORY_DIR).with_suffix("").as_posix() for path in HISTORIES]


def test_the_previous_release_left_histories_to_replay() -> None:
    assert len(HISTORIES) >= 10, "tests/histories/ lost its recorded histories"


@pytest.mark.parametrize("path", HISTORIES, ids=NAMES)
async def test_committed_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(workflow_id(path), path.read_text())
    converter = data_converter(Settings(payload_store=str(PAYLOADS)))
    result = await replayer(converter).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.relative_to(HISTORY_DIR)} no longer replays: {result.replay_failure}"


def test_a_history_with_stored_payloads_is_committed_with_its_payloads() -> None:
    path = history_path("stored_payloads/large_payloads_by_reference")
    history = WorkflowHistory.from_json(workflow_id(path), path.read_text())
    found = references(history)
    assert found and all(r.driver_name == "local-files" for r in found)
    for reference in found:
        digest = reference.claim_data["hash_value"]
        assert (PAYLOADS / "sha256" / digest[:2] / digest).is_file(), digest


async def test_a_history_whose_commands_the_code_no_longer_gives_fails_to_replay() -> None:
    """The replayer above is strict: the same history with one activity renamed is a non-determinism
    error, so a passing replay means the code still gives the recorded commands."""
    path = history_path("approved_calls/patch_checks_before_asking")
    recorded = json.loads(path.read_text())
    scheduled = next(e for e in recorded["events"] if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED")
    scheduled["activityTaskScheduledEventAttributes"]["activityType"]["name"] = "an_activity_never_written"
    history = WorkflowHistory.from_json(workflow_id(path), json.dumps(recorded))
    converter = data_converter(Settings(payload_store=str(PAYLOADS)))
    result = await replayer(converter).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "nondetermin" in str(result.replay_failure).lower()
