"""Traces over OTLP: `python worker.py` and the CLI with OTEL_EXPORTER_OTLP_ENDPOINT set export to
a receiver the test runs; the request's trace links the model call, the request, the decision
(its door and person) and the tool run, across a worker stopped between the request and the
decision; the card's trace id is in `show --json`; no argument value is in any span."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.observability.otlp_receiver import OtlpReceiver
from tests.support.processes import DevServer
from tests.support.stack import Stack, make_stack, until

SECRET = "kiwi-4711"


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    tmp = tmp_path_factory.mktemp("temporal")
    server = DevServer(tmp / "temporal.db", tmp / "temporal.log").start()
    yield server
    server.stop()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver().start()
    yield running
    running.stop()


@pytest.fixture
def stack(tmp_path: Path, temporal: DevServer, receiver: OtlpReceiver) -> Iterator[Stack]:
    system = make_stack(tmp_path, temporal.address)
    system.env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    yield system
    system.stop()


def test_one_trace_links_model_request_decision_and_tool_across_a_worker_restart(
    stack: Stack, receiver: OtlpReceiver
) -> None:
    first = stack.start_worker().wait_ready()
    conversation = stack.cli_ok("start", f"write {SECRET} to {SECRET}.txt").stdout.strip()
    [row] = stack.wait_pending(conversation, 1)
    trace_id = row["trace_id"]
    assert trace_id and len(trace_id) == 32
    until(lambda: any(s.name == "approval.requested" for s in receiver.in_trace(trace_id)), timeout=30)
    first.stop()  # no worker while the decision is made

    stack.cli_ok("approve", row["request_id"], "--as", "alice")
    stack.start_worker().wait_ready()
    stack.wait_status(conversation, "idle")
    spans = until(lambda: _with(receiver, trace_id, "RunActivity:execute_tool"), timeout=30)

    names = {span.name for span in spans}
    assert {"StartWorkflow:ConversationWorkflow", "RunActivity:call_llm", "approval.requested"} <= names
    assert {"approval.decide", "SignalWorkflow:approval_decision", "RunActivity:execute_tool"} <= names
    [decided] = [span for span in spans if span.name == "approval.decide"]
    assert decided.attributes["approval.door"] == "cli"
    assert decided.attributes["approval.decided_by"] == "alice"
    assert decided.attributes["approval.request_id"] == row["request_id"]
    assert decided.service == "approvals-cli"
    by_id = {span.span_id: span for span in spans}
    assert decided.parent_id in by_id, "the decision's span hangs in the request's trace"
    signal = next(span for span in spans if span.name == "SignalWorkflow:approval_decision")
    assert signal.parent_id == decided.span_id
    assert {span.service for span in spans} >= {"approvals-cli", "approvals-worker"}
    assert len({span.trace_id for span in spans}) == 1

    every_value = json.dumps([span.attributes for span in receiver.spans] + [s.name for s in receiver.spans])
    assert SECRET not in every_value, "an argument value reached a span"

    shown = stack.show(conversation)
    assert shown["trace_id"] == trace_id and shown["trace_ids"] == {row["request_id"]: trace_id}


def _with(receiver: OtlpReceiver, trace_id: str, name: str) -> list | None:
    """The trace's spans once one of them is `name`."""
    found = receiver.in_trace(trace_id)
    return found if any(span.name == name for span in found) else None
