"""The other channel, measured: the same reply through temporalio.contrib.workflow_streams.

A probe workflow hosts a WorkflowStream; its one activity publishes the reply's pieces as the
model would stream them (batched every 100 ms, the first piece flushed at once); a subscriber
follows the stream as a UI's backend would. Each flush is a signal and each subscriber poll an
update in the workflow's history, which is what this counts.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamClient
from temporalio.worker import Worker

TOPIC = "delta"
first_published: dict[str, float] = {}


@activity.defn(name="bench_publish_reply")
async def publish_reply(pieces: list[str], delay: float) -> str:
    stream = WorkflowStreamClient.from_within_activity(batch_interval=timedelta(milliseconds=100))
    topic = stream.topic(TOPIC, type=str)
    async with stream:
        for number, piece in enumerate(pieces):
            if number == 0:
                first_published[str(activity.info().workflow_id)] = time.monotonic()
            topic.publish(piece, force_flush=number == 0)
            await asyncio.sleep(delay)
    return "".join(pieces)


@workflow.defn(name="BenchStreamProbe")
class StreamProbe:
    @workflow.init
    def __init__(self, pieces: list[str], delay: float) -> None:
        self.stream = WorkflowStream()

    @workflow.run
    async def run(self, pieces: list[str], delay: float) -> str:
        text: str = await workflow.execute_activity(
            publish_reply, args=[pieces, delay], start_to_close_timeout=timedelta(minutes=2)
        )
        self.stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return text


async def measure(client: Client, pieces: list[str], delay: float, count: int) -> dict[str, Any]:
    """Per reply: seconds to the first piece at the subscriber, and the history's event count."""
    queue = f"bench-probe-{uuid.uuid4().hex[:6]}"
    firsts: list[float] = []
    events: list[int] = []
    signals: list[int] = []
    polls: list[int] = []
    async with Worker(client, task_queue=queue, workflows=[StreamProbe], activities=[publish_reply]):
        for n in range(count):
            wid = f"stream-probe-{uuid.uuid4().hex[:8]}-{n}"
            handle = await client.start_workflow(StreamProbe.run, args=[pieces, delay], id=wid, task_queue=queue)
            subscriber = WorkflowStreamClient.create(client, wid)
            received: list[str] = []
            async for item in subscriber.subscribe(TOPIC, result_type=str):
                if not received:
                    firsts.append(time.monotonic() - first_published[wid])
                received.append(item.data)
            assert "".join(received) == await handle.result() == "".join(pieces)
            history = (await handle.fetch_history()).events
            events.append(len(history))
            signals.append(sum(1 for e in history if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED))
            polls.append(
                sum(1 for e in history if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
            )
    return {"first_piece_seconds": firsts, "history_events": events, "publish_signals": signals, "poll_updates": polls}
