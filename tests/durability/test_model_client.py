"""The model client lives as long as the worker: made by the first model call, closed when the
worker stops (left to the collector, the openai client warned that its close was never awaited)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import wait_status
from tests.support.processes import REPO_ROOT
from tests.support.scripts import ScriptedModel
from worker import build_worker


async def test_the_worker_closes_the_model_client_its_calls_made(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    model_clients: list[Any],
) -> None:
    async with build_worker(client, settings):
        assert model_clients == [], "no client before the first model call"
        cid = histories.track(await start_conversation(client, settings, "hello"))
        await wait_status(client, cid, "idle")
        assert [c.is_closed() for c in model_clients] == [False]
    assert len(model.reply_requests) == 1
    assert [c.is_closed() for c in model_clients] == [True]


def test_the_client_library_is_loaded_with_the_workers_activities_not_by_the_first_call() -> None:
    """Loaded by the first model call, its import held the event loop of a worker that had just
    taken over waiting conversations; the client itself still waits for the first call."""
    probe = (
        "import sys, activities.llm as llm\n"
        "before = 'openai' in sys.modules\n"
        "activities = llm.LlmActivities('http://127.0.0.1:9/v1', 'k', 'm')\n"
        "print(before, 'openai.types.chat' in sys.modules, activities.endpoint._current is None)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]
