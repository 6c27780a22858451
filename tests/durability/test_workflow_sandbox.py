"""The workers' sandbox (config/workflow_sandbox.py): entry strings compiled once per process, and a
payload's contexts looked up without entering the sandbox, with the same answers as the SDK's own."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHistory
from temporalio.converter import (
    ActivitySerializationContext,
    DataConverter,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from config.settings import Settings
from config.workflow_sandbox import WORKFLOW_RUNNER, compiled
from payload_store import data_converter
from tests.support.context_probe import ECHO, ContextProbe, echo
from tests.support.histories import PAYLOADS, history_path, workflow_id
from worker import replayer


async def replay(name: str) -> None:
    path = history_path(name)
    history = WorkflowHistory.from_json(workflow_id(path), path.read_text())
    converter = data_converter(Settings(payload_store=str(PAYLOADS)))
    result = await replayer(converter).replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def test_a_second_conversation_runs_on_strings_compiled_for_the_first() -> None:
    assert isinstance(WORKFLOW_RUNNER, SandboxedWorkflowRunner)  # still the SDK's sandbox, restrictions and all
    await replay("compaction/compacted_conversation")
    after_first = compiled.cache_info()
    await replay("compaction/failed_summary_keeps_messages")
    after_second = compiled.cache_info()
    assert after_second.misses == after_first.misses, "an entry string was compiled again"
    assert after_second.hits - after_first.hits >= 10  # each of its activations went through the cache


Seen = list[tuple[str, str]]


class ContextRecordingCodec(PayloadCodec, WithSerializationContext):
    """Records, for every payload it encodes, the serialization context the worker gave it."""

    def __init__(self, seen: Seen, context: SerializationContext | None = None) -> None:
        self.seen, self.context = seen, context

    def with_context(self, context: SerializationContext) -> ContextRecordingCodec:
        return ContextRecordingCodec(self.seen, context)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        context = self.context
        if isinstance(context, ActivitySerializationContext):
            self.seen.append(("activity", f"{context.activity_type} {context.workflow_id}"))
        elif isinstance(context, WorkflowSerializationContext):
            self.seen.append(("workflow", context.workflow_id))
        else:
            self.seen.append(("none", ""))
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


async def contexts_seen(client: Client, runner: SandboxedWorkflowRunner) -> Seen:
    seen: Seen = []
    converter = dataclasses.replace(DataConverter.default, payload_codec=ContextRecordingCodec(seen))
    config = client.config()
    config["data_converter"] = converter
    recording = Client(**config)
    queue = f"context-probe-{uuid.uuid4().hex[:8]}"
    async with Worker(recording, task_queue=queue, workflows=[ContextProbe], activities=[echo], workflow_runner=runner):
        result = await recording.execute_workflow(ContextProbe.run, "hello", id="context-probe", task_queue=queue)
    assert result == "hello"
    return seen


async def test_payload_contexts_are_the_ones_the_sdks_own_sandbox_gives(client: Client) -> None:
    ours = await contexts_seen(client, WORKFLOW_RUNNER)
    sdk = await contexts_seen(client, SandboxedWorkflowRunner())
    assert ours == sdk
    # The activity's input was encoded in its activity's context, inside the workflow's task.
    assert ("activity", f"{ECHO} context-probe") in ours and ("workflow", "context-probe") in ours
