"""Both `/metrics` endpoints after a real flow: the worker as `python worker.py` with
WORKER_METRICS_PORT, decisions from the CLI and the UI, one expiry, one refusal; the counts parsed
with prometheus_client's parser match what was done, and no argument value appears in them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import REPO_ROOT, DevServer, free_port, wait_for_port
from tests.support.stack import Stack, make_stack, until
from tests.support.ui_fixtures import served_app

SECRET_WORDS = ("kiwi", "mango", "papaya", "guava", "lychee", "quince", "zorblat")


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("temporal")
    server = DevServer(tmp / "temporal.db", tmp / "temporal.log").start()
    yield server
    server.stop()


@pytest.fixture
def stack(tmp_path: Path, temporal: DevServer) -> Iterator[Stack]:
    system = make_stack(tmp_path, temporal.address)
    system.env["WORKER_METRICS_PORT"] = str(free_port())
    yield system
    system.stop()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and sorted labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def start(stack: Stack, message: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "starter.py", "start", message],
        cwd=REPO_ROOT,
        env={**stack.env, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_both_metrics_endpoints_count_what_was_done(stack: Stack, temporal: DevServer) -> None:
    stack.start_worker().wait_ready()
    worker_port = int(stack.env["WORKER_METRICS_PORT"])
    wait_for_port(worker_port)
    ui = served_app(stack.settings, temporal.address)
    try:
        two = start(stack, "write kiwi to kiwi.txt and write mango to mango.txt")
        first, second = stack.wait_pending(two, 2)
        stack.cli_ok("approve", first["request_id"], "--as", "alice")
        stack.cli_ok("approve", second["request_id"], "--as", "alice")
        one = start(stack, "write papaya to papaya.txt")
        [by_ui] = stack.wait_pending(one, 1)
        shell = start(stack, "run echo guava")
        [denied] = stack.wait_pending(shell, 1)
        stack.cli_ok("deny", denied["request_id"], "--reason", "no")
        refused = stack.cli("approve", denied["request_id"])
        assert refused.returncode == 3
        late = start(stack, "write lychee to lychee.txt", APPROVAL_TIMEOUT="1")
        waiting = start(stack, "write quince to quince.txt")
        stack.wait_pending(waiting, 1)
        with httpx.Client(base_url=ui.url, timeout=30) as http:
            sent = http.post(f"/api/approvals/{by_ui['request_id']}/decision", json={"decision": "allow"})
            assert sent.status_code == 200, sent.text
            for conversation in (two, one, shell, late):
                stack.wait_status(conversation, "idle")
            ui_text = http.get("/metrics").text
        worker_text = until(lambda: _scrape(worker_port, "approvals_tool_runs_total"))
    finally:
        ui.stop()

    seen = samples(ui_text)
    decisions = {key: count for key, count in seen.items() if key[0] == "approvals_decisions_total"}
    assert decisions == {
        ("approvals_decisions_total", (("door", "cli"), ("outcome", "allow"), ("tool", "write_file"))): 2.0,
        ("approvals_decisions_total", (("door", "ui"), ("outcome", "allow"), ("tool", "write_file"))): 1.0,
        ("approvals_decisions_total", (("door", "cli"), ("outcome", "deny"), ("tool", "run_shell"))): 1.0,
        ("approvals_decisions_total", (("door", "none"), ("outcome", "expired"), ("tool", "write_file"))): 1.0,
    }
    assert value(seen, "approvals_waiting", tool="write_file") == 1.0
    assert value(seen, "approvals_expired_total", tool="write_file") == 1.0
    assert value(seen, "approvals_time_to_decision_seconds_count", tool="write_file", door="cli") == 2.0
    assert value(seen, "approvals_time_to_decision_seconds_count", tool="write_file", door="ui") == 1.0
    assert value(seen, "approvals_time_to_decision_seconds_count", tool="run_shell", door="cli") == 1.0
    inf = value(seen, "approvals_time_to_decision_seconds_bucket", tool="write_file", door="cli", le="+Inf")
    assert inf == 2.0
    assert value(seen, "approvals_decisions_refused_total", reason="ApprovalAlreadyResolved", door="cli") == 1.0

    ran = samples(worker_text)
    assert value(ran, "approvals_tool_runs_total", tool="write_file", result="done") == 3.0
    assert value(ran, "approvals_tool_runs_total", tool="run_shell", result="done") == 0.0
    assert sum(count for (name, _), count in ran.items() if name == "approvals_sandbox_starts_total") >= 3
    assert any(name.startswith("temporal_") for name, _ in ran), "the Temporal SDK's runtime metrics are served"

    for text in (ui_text, worker_text):
        leaked = [word for word in SECRET_WORDS if word in text]
        assert not leaked, f"argument values in metrics: {leaked}"
    assert os.environ.get("OPENAI_API_KEY", "demo-key") not in ui_text + worker_text


def _scrape(port: int, needed: str) -> str | None:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return text if needed in text else None
