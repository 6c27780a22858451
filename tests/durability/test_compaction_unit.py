"""The pure pieces of compaction: counting, clipping, where a fold may cut, the summarise request,
what counts as a context-window error, the per-model budget, and the archive's idempotent write."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activities.llm import wire_messages
from activities.llm_errors import is_context_window_error
from config.settings import DEFAULT_CONTEXT_BUDGET, ConfigError, Settings, default_context_budget
from core import compaction
from core.chat_model import ChatMessage, ContextAnchor, ToolCall
from core.projection_model import ArchivedMessage, CompactionProjection, ConversationProjection
from storage.store import ProjectionStore
from tests.support.helpers import Db, rows
from tests.support.histories import HISTORY_DIR
from tests.support.postgres import on_both_backends

SYSTEM = ChatMessage(role="system", content="prompt")


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def step(call_ids: list[str], result_chars: int) -> list[ChatMessage]:
    """An assistant message calling tools, then one result per call."""
    calls = [ToolCall(id=cid, name="read_file", arguments='{"path": "f"}') for cid in call_ids]
    results = [
        ChatMessage(role="tool", tool_call_id=cid, name="read_file", content="x" * result_chars) for cid in call_ids
    ]
    return [ChatMessage(role="assistant", tool_calls=calls), *results]


@st.composite
def transcripts(draw: st.DrawFn) -> list[ChatMessage]:
    messages = [SYSTEM]
    for turn in range(draw(st.integers(1, 6))):
        messages.append(user(f"turn {turn}" * draw(st.integers(1, 50))))
        for n in range(draw(st.integers(0, 3))):
            ids = [f"c{turn}_{n}_{k}" for k in range(draw(st.integers(1, 4)))]
            messages += step(ids, draw(st.integers(0, 30_000)))
        messages.append(ChatMessage(role="assistant", content="done"))
    return messages


@given(transcripts(), st.integers(compaction.MIN_BUDGET_TOKENS, 50_000))
def test_a_fold_never_separates_a_call_from_its_result(messages: list[ChatMessage], budget: int) -> None:
    fold = compaction.plan_fold(messages, budget)
    if fold is None:
        return
    assert fold.folded and fold.kept, "a fold folds something and keeps the latest step"
    assert fold.prompt + fold.folded + fold.kept == messages
    assert fold.kept[0].role != "tool"
    answered = {m.tool_call_id for m in fold.kept if m.role == "tool"}
    called = {c.id for m in fold.kept for c in m.tool_calls}
    assert answered == called
    result = compaction.compacted(fold, "what happened")
    assert compaction.is_summary(result[1]) and result[2:] == fold.kept


@given(transcripts(), st.integers(compaction.MIN_BUDGET_TOKENS, 50_000))
def test_the_view_clips_content_only_and_keeps_every_message(messages: list[ChatMessage], budget: int) -> None:
    view = compaction.model_view(messages, budget)
    assert [(m.role, m.tool_call_id, m.tool_calls) for m in view] == [
        (m.role, m.tool_call_id, m.tool_calls) for m in messages
    ]
    for seen, full in zip(view, messages, strict=True):
        content = full.content or ""
        assert (seen.content or "") == content or (
            (seen.content or "").startswith(content[: compaction.MIN_CLIP_CHARS])
            and "not shown to the model" in (seen.content or "")
        )


def test_recent_turns_stay_verbatim_and_older_ones_fold() -> None:
    messages = [SYSTEM, user("old"), *step(["a"], 30_000), user("recent"), *step(["b"], 300)]
    fold = compaction.plan_fold(messages, 10_000)
    assert fold is not None
    assert fold.kept[0].content == "recent", "the cut falls before the user message: whole turns"
    assert fold.kept[-1].content == "x" * 300


def test_a_step_bigger_than_the_budget_is_kept_alone_and_clipped_with_a_marker() -> None:
    messages = [SYSTEM, user("read everything"), *step(["a", "b"], 90_000)]
    fold = compaction.plan_fold(messages, 4_000)
    assert fold is not None and fold.folded == [messages[1]] and fold.kept == messages[2:]
    view = compaction.model_view(fold.kept, 4_000)
    assert all(len(m.content or "") < 3_000 and "more characters not shown" in (m.content or "") for m in view[1:])


def test_nothing_to_fold_is_none() -> None:
    assert compaction.plan_fold([SYSTEM, user("x" * 100_000)], 2_000) is None


def test_the_api_count_is_used_up_to_its_anchor_and_estimated_after() -> None:
    messages = [SYSTEM, user("hi"), ChatMessage(role="assistant", content="hello"), user("x" * 300)]
    estimate = compaction.context_tokens(messages, [], None)
    anchored = compaction.context_tokens(messages, [], ContextAnchor(messages=3, tokens=10))
    assert anchored == 10 + compaction.message_tokens(messages[3])
    assert estimate == sum(compaction.message_tokens(m) for m in messages)
    # An anchor from before a compaction (longer than the transcript) is not trusted.
    assert compaction.context_tokens(messages, [], ContextAnchor(messages=9, tokens=10)) == estimate


def test_the_summarise_request_is_marked_bounded_and_carries_the_summary_so_far() -> None:
    messages = [SYSTEM, user("first ask"), *step(["a"], 200_000), user("second ask"), *step(["b"], 10)]
    previous = compaction.compacted(compaction.Fold([SYSTEM], None, [], []), "the story so far")
    fold = compaction.plan_fold([*previous[:2], *messages[1:]], 5_000)
    assert fold is not None and fold.previous_summary == "the story so far"
    request = compaction.summary_request(fold, 5_000)
    wire = [m.model_dump() for m in request]
    assert compaction.is_summary_request(wire) and not compaction.is_summary_request(wire[1:])
    assert "the story so far" in (request[1].content or "") and "user: first ask" in (request[1].content or "")
    assert sum(compaction.message_tokens(m) for m in request) < 5_000


def test_a_refusal_lowers_the_budget_but_never_raises_it() -> None:
    assert compaction.learned_budget(50_000, 10_000) == 8_000
    assert compaction.learned_budget(5_000, 100_000) == 5_000
    assert compaction.learned_budget(50_000, 10) == compaction.MIN_BUDGET_TOKENS


def test_the_prompt_and_the_summary_go_to_the_model_as_one_system_message() -> None:
    messages = compaction.compacted(compaction.Fold([SYSTEM], None, [], [user("next")]), "story")
    wire = wire_messages(messages)
    assert [m["role"] for m in wire] == ["system", "user"]
    assert wire[0]["content"].startswith("prompt\n\n" + compaction.SUMMARY_HEADER)


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (400, "context_length_exceeded", "anything"),
        (400, None, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens"),
        (400, None, "the request exceeds the available context size, try increasing it"),
        (400, None, "prompt is too long: 210000 tokens > 200000 maximum"),
        (400, None, "Input is too long for requested model."),
        (413, None, "Request Entity Too Large"),
        (400, "exceed_context_size_error", "x"),
    ],
)
def test_context_window_errors_are_recognised(status: int, code: str | None, message: str) -> None:
    assert is_context_window_error(status, code, message)


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (400, "invalid_value", "Invalid value for 'tools'"),
        (401, None, "maximum context length"),
        (500, None, "context window overloaded"),
    ],
)
def test_other_errors_are_not_context_window_errors(status: int, code: str | None, message: str) -> None:
    assert not is_context_window_error(status, code, message)


def test_the_budget_follows_the_model_and_the_variable_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_context_budget("gpt-4o-mini") == 96_000
    assert default_context_budget("openai/gpt-4.1") == 200_000, "capped"
    assert default_context_budget("llama3.1:8b") == 96_000 and default_context_budget("llama3") == 6_144
    assert default_context_budget("some-local-model") == DEFAULT_CONTEXT_BUDGET
    monkeypatch.setenv("LLM_MODEL", "gpt-4o")
    monkeypatch.delenv("CONTEXT_BUDGET_TOKENS", raising=False)
    assert Settings().context_budget_tokens == 96_000
    monkeypatch.setenv("CONTEXT_BUDGET_TOKENS", "")  # as docker-compose passes it when unset
    assert Settings().context_budget_tokens == 96_000
    monkeypatch.setenv("CONTEXT_BUDGET_TOKENS", "5000")
    assert Settings().context_budget_tokens == 5_000
    monkeypatch.setenv("CONTEXT_BUDGET_TOKENS", "lots")
    with pytest.raises(ConfigError, match="CONTEXT_BUDGET_TOKENS"):
        Settings()


@on_both_backends
async def test_archiving_twice_adds_nothing(database: Db) -> None:
    store = ProjectionStore(database)
    conversation = ConversationProjection(
        conversation_id="c", turn_status="running", pending_count=0, updated_at=datetime.now(UTC), version=1
    )
    payload = CompactionProjection(
        messages=[ArchivedMessage(seq=n, message=user(f"m{n}")) for n in (1, 2, 3)], conversation=conversation
    )
    for _ in range(2):
        await store.project_compaction(payload)
    await store.close()
    stored = rows(database, "SELECT seq FROM ui_transcript_archive WHERE conversation_id = 'c' ORDER BY seq")
    assert stored == [{"seq": 1}, {"seq": 2}, {"seq": 3}]


def test_the_committed_histories_cover_compaction_and_the_context_error_retry() -> None:
    """tests/durability/test_committed_histories.py replays these; here: they hold what they are named for."""
    folder = HISTORY_DIR

    def scheduled(name: str) -> list[str]:
        events = json.loads((folder / f"{name}.json").read_text())["events"]
        return [
            e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
            for e in events
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        ]

    def failures(name: str) -> list[str]:
        events = json.loads((folder / f"{name}.json").read_text())["events"]
        return [
            e["activityTaskFailedEventAttributes"]["failure"]["applicationFailureInfo"]["type"]
            for e in events
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_FAILED"
        ]

    assert scheduled("compaction/compacted_conversation").count("project_compaction") >= 2
    assert failures("compaction/context_error_compacted_and_retried") == ["LlmContextWindowExceeded"]
    assert "project_compaction" in scheduled("compaction/context_error_compacted_and_retried")
    assert failures("compaction/context_error_failed_turn") == ["LlmContextWindowExceeded"] * 2
