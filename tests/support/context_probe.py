"""A workflow that runs one activity: the least that gives a payload an activity's serialization
context (tests/durability/test_workflow_sandbox.py). Its own module, so the sandbox imports only this."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

ECHO = "context_probe_echo"


@activity.defn(name=ECHO)
async def echo(text: str) -> str:
    return text


@workflow.defn(name="ContextProbe")
class ContextProbe:
    @workflow.run
    async def run(self, text: str) -> str:
        return str(await workflow.execute_activity(ECHO, text, start_to_close_timeout=timedelta(seconds=30)))
