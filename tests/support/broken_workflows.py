"""Bad deploys of the conversation workflow, for the failure-watch tests: same type name, broken code.

Each fails every workflow task of a conversation recorded by the real workflow, for good.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from core.contract import WORKFLOW_TYPE
    from core.conversation_model import ConversationInput, ConversationState
    from workflows.conversation import ConversationWorkflow


@workflow.defn(name=WORKFLOW_TYPE)
class RaisingConversation(ConversationWorkflow):
    """An exception in workflow code."""

    @workflow.run
    async def run(self, start: ConversationInput) -> ConversationState:
        raise RuntimeError("bad deploy: the conversation code raises")


@workflow.defn(name=WORKFLOW_TYPE)
class DriftedConversation(ConversationWorkflow):
    """Different commands than the recorded history: a timer first. Replay is non-deterministic."""

    @workflow.run
    async def run(self, start: ConversationInput) -> ConversationState:
        await workflow.sleep(timedelta(seconds=1))
        return await super().run(start)
