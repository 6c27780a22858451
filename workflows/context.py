"""The model's context, kept within the conversation's token budget by compaction.

Where the full transcript lives: the workflow keeps only what the model sees (the system prompt,
a summary, the recent messages), so its state, every `call_llm` input, every query answer and
every continue-as-new input stay bounded however long the conversation runs. The messages a
compaction removes are first written to the projection's transcript archive by an activity, and
only once that write is recorded in history do they leave the workflow's state; `show` and the UI
read the archive followed by the current messages. The archive is a read model like the rest of
the projection: its rows are keyed by position in the transcript, so a retried or replayed write
adds nothing, and history keeps each archived batch as the input of its activity.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    # Pure data and pure functions; passing them through keeps one pydantic class identity.
    from core import compaction
    from core.chat_model import ChatMessage, ContextAnchor, LlmReply, LlmRequest, TokenUsage
    from core.conversation_model import ConversationInput
    from core.projection_model import ArchivedMessage, CompactionProjection
    from workflows import activity_calls as calls
    from workflows.status import StatusKeeper

# Each archive write stays far below Temporal's 2 MB payload limit.
ARCHIVE_CHUNK_CHARS = 400_000
# After a failed summary, the next try waits until the transcript has grown by this many messages.
SUMMARY_RETRY_AFTER_MESSAGES = 2


class ContextKeeper:
    def __init__(self, conversation_id: str, start: ConversationInput, status: StatusKeeper) -> None:
        self._id = conversation_id
        self._status = status
        self.budget = start.context_budget_tokens or compaction.DEFAULT_BUDGET_TOKENS
        self.anchor: ContextAnchor | None = start.context_anchor
        self.archived = start.archived_messages
        # Set while a summary the model could not write waits for its retry (a new run retries at once).
        self._summary_retry_at: int | None = None

    def request(self, turn_id: str, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> LlmRequest:
        view = compaction.model_view(messages, self.budget)
        if self._summary_retry_at is not None:
            view = compaction.tool_results_clipped(view, self.budget - compaction.tools_tokens(tools))
        return LlmRequest(conversation_id=self._id, turn_id=turn_id, messages=view, tools=tools)

    def wants_compaction(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> bool:
        waiting = self._summary_retry_at is not None and len(messages) < self._summary_retry_at
        return not waiting and self.over_budget(messages, tools)

    def tokens(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> int:
        return compaction.context_tokens(compaction.model_view(messages, self.budget), tools, self.anchor)

    def over_budget(self, messages: list[ChatMessage], tools: list[dict[str, Any]]) -> bool:
        return self.tokens(messages, tools) > self.budget

    def note_usage(self, transcript_length: int, usage: TokenUsage | None) -> None:
        """The API's count of the transcript up to and including the reply just recorded."""
        if usage is not None:
            self.anchor = ContextAnchor(
                messages=transcript_length, tokens=usage.prompt_tokens + usage.completion_tokens
            )

    def learn_refusal(self, refused_tokens: int) -> None:
        self.budget = compaction.learned_budget(self.budget, refused_tokens)
        self.anchor = None  # counted under the old budget's clipping

    async def compact(
        self, turn_id: str, messages: list[ChatMessage], tools: list[dict[str, Any]]
    ) -> list[ChatMessage] | None:
        """The compacted transcript, or None when nothing can be folded. The summary is an
        activity result and the archive write is recorded before this returns, so a worker killed
        at any point resumes without asking the model again or archiving twice."""
        fold = compaction.plan_fold(
            messages, self.budget, keep_request=workflow.patched(patches.FOLD_KEEPS_TURN_REQUEST)
        )
        if fold is None:
            return None
        before = self.tokens(messages, tools)
        folded_tokens = sum(compaction.message_tokens(m) for m in compaction.model_view(fold.folded, self.budget))
        summary, failure = await self._summarise(turn_id, fold, folded_tokens)
        if failure is None:
            self._summary_retry_at, source = None, "model"
        elif workflow.patched(patches.FAILED_SUMMARY_KEEPS_MESSAGES):
            workflow.logger.warning("the model could not summarise; nothing folded, retried later: %s", failure)
            self._summary_retry_at = len(messages) + SUMMARY_RETRY_AFTER_MESSAGES
            return None
        else:
            summary, source = compaction.fallback_summary(fold, failure), "fallback"
        first = self.archived + 1
        archived = [ArchivedMessage(seq=first + n, message=m) for n, m in enumerate(fold.folded)]
        result = compaction.compacted(fold, summary)
        self.anchor = None
        after = self.tokens(result, tools)
        payload = {
            "turn_id": turn_id,
            "folded_messages": len(fold.folded),
            "folded_tokens": folded_tokens,
            "kept_messages": len(fold.kept),
            "tokens_before": before,
            "tokens_after": after,
            "budget_tokens": self.budget,
            "first_seq": first,
            "last_seq": first + len(archived) - 1,
            "summary_by": source,
        }
        workflow.logger.info("compacting conversation %s: %s", self._id, payload)
        await self._archive(archived, payload)
        self.archived += len(archived)
        return result

    async def _summarise(self, turn_id: str, fold: compaction.Fold, folded_tokens: int) -> tuple[str, str | None]:
        """The model's summary, or why it could not write one."""
        request = LlmRequest(
            conversation_id=self._id,
            turn_id=turn_id,
            messages=compaction.summary_request(fold, self.budget),
            tools=[],
            purpose="summarise",
        )
        summary = f"{turn_id}: summarise {len(fold.folded)} earlier messages (~{folded_tokens} tokens) to compact"
        try:
            reply: LlmReply = await calls.call_llm(request, summary=summary)
        except ActivityError as err:
            return "", str(err.__cause__ or err)
        if not (reply.content or "").strip():
            return "", "it answered with no text"
        return reply.content or "", None

    async def _archive(self, archived: list[ArchivedMessage], event_payload: dict[str, Any]) -> None:
        """Archive in chunks; the last holds the `conversation.compacted` event."""
        chunks: list[list[ArchivedMessage]] = [[]]
        size = 0
        for item in archived:
            length = len(item.message.content or "") + sum(len(c.arguments) for c in item.message.tool_calls)
            if chunks[-1] and size + length > ARCHIVE_CHUNK_CHARS:
                chunks.append([])
                size = 0
            chunks[-1].append(item)
            size += length
        status = self._status
        for n, chunk in enumerate(chunks):
            last = n == len(chunks) - 1
            events = (
                [status.event("conversation.compacted", f"compaction_{event_payload['last_seq']}", event_payload)]
                if last
                else []
            )
            snapshot = status.snapshot(status.turn_status, [], events)
            await calls.project(CompactionProjection(messages=chunk, conversation=snapshot))
