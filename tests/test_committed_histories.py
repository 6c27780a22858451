"""Histories recorded by earlier releases replay on today's code.

Conversations wait for days across deploys: a worker running new code must rebuild every waiting
or running conversation from the history the old code wrote. Each file under tests/histories/ is
one such history (finished, waiting for a person, continued as new, expired); a change of the
workflow's commands that is not behind `workflow.patched` fails here with a non-determinism error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from workflows.conversation import ConversationWorkflow

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_the_previous_release_left_histories_to_replay() -> None:
    assert len(HISTORIES) >= 10, "tests/histories/ lost its recorded histories"


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_committed_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[ConversationWorkflow], data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name} no longer replays: {result.replay_failure}"
