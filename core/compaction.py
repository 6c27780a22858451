"""Keeping the model's context within a budget: counting, clipping, and choosing what to fold.

Pure functions of the transcript (no clock, no I/O), so the workflow can call them and replay
decides exactly as the first run did. The transcript the workflow keeps is the model's: a head
(the system prompt, then the summary of everything compacted so far) and the recent messages
verbatim. Compaction folds the oldest messages into a new summary written by the model; the cut
always falls before a user or assistant message, so an assistant message that called tools never
loses its results. Approvals, decisions and the key/value state live outside the transcript and
are not touched.

Tokens are the API's own count (its `usage`) where the last call returned one, and an estimate of
one token per three characters otherwise: real text runs nearer four, so the estimate errs high.

These numbers decide where a running conversation compacts, so replay depends on them: a change
to them, to the estimate or to the fold's rule goes behind `workflow.patched` like any change of
the workflow's commands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.chat_model import ChatMessage, ContextAnchor

DEFAULT_BUDGET_TOKENS = 32_000
MIN_BUDGET_TOKENS = 1_000
CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD_TOKENS = 4
# One message, or all the results of one assistant message together, never take more than this.
GROUP_SHARE = 0.4
# After a compaction the verbatim recent messages take at most this share of the budget.
KEEP_SHARE = 0.5
SUMMARY_SHARE = 0.15
SUMMARY_INPUT_SHARE = 0.6
# After a context-window error the budget drops to this share of what the model refused.
LEARN_SHARE = 0.8
MIN_CLIP_CHARS = 200

SUMMARY_NAME = "conversation_summary"
# The current turn's request when a fold reached into its turn: it stays word for word in the head.
REQUEST_NAME = "turn_request"
REQUEST_HEADER = "The person's request for the current turn, word for word:"
SUMMARY_REQUEST_MARK = "[summarise request]"
SUMMARY_INSTRUCTIONS = (
    f"{SUMMARY_REQUEST_MARK} You compact the earlier part of a conversation between a person and an "
    "assistant that uses tools, so that the assistant can go on without it. Write a concise summary: "
    "what the person asked and still expects, what was done and found, which tool calls were denied or "
    "failed and why, file names, values and results that later steps depend on, and open tasks. "
    "Plain text, at most 300 words. Do not invent anything."
)
SUMMARY_HEADER = (
    "Summary of the earlier part of this conversation, written when its transcript was compacted "
    "(people can still read the full transcript):"
)


def text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def message_tokens(message: ChatMessage) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + text_tokens(message.content or "")
    for call in message.tool_calls:
        tokens += MESSAGE_OVERHEAD_TOKENS + text_tokens(call.id) + text_tokens(call.name) + text_tokens(call.arguments)
    return tokens


def tools_tokens(tools: list[dict[str, Any]]) -> int:
    return text_tokens(json.dumps(tools, sort_keys=True)) if tools else 0


def clip(text: str, max_tokens: float) -> str:
    """A prefix of the text that fits, and a marker saying how much the model does not see."""
    limit = max(MIN_CLIP_CHARS, int(max_tokens) * CHARS_PER_TOKEN)
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return text[:limit] + f"\n[... {cut} more characters not shown to the model: the context budget is full ...]"


def is_summary(message: ChatMessage) -> bool:
    return message.role == "system" and message.name == SUMMARY_NAME


def is_request_note(message: ChatMessage) -> bool:
    return message.role == "system" and message.name == REQUEST_NAME


def head_size(messages: list[ChatMessage]) -> int:
    """The leading system messages: the prompt and the summary of what was compacted."""
    size = 0
    while size < len(messages) and messages[size].role == "system":
        size += 1
    return size


def model_view(messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
    """What the model is sent: the transcript, message for message, with any message (and the
    results of one assistant message together) too big for the budget clipped with a marker."""
    view: list[ChatMessage] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.role != "tool":
            share = budget * (SUMMARY_SHARE if is_summary(message) else GROUP_SHARE)
            view.append(_clipped(message, share))
            i += 1
            continue
        end = i
        while end < len(messages) and messages[end].role == "tool":
            end += 1
        share = budget * GROUP_SHARE / (end - i)
        view.extend(_clipped(m, share) for m in messages[i:end])
        i = end
    return view


def _clipped(message: ChatMessage, max_tokens: float) -> ChatMessage:
    content = message.content or ""
    clipped = clip(content, max_tokens)
    return message if clipped == content else message.model_copy(update={"content": clipped})


def context_tokens(view: list[ChatMessage], tools: list[dict[str, Any]], anchor: ContextAnchor | None) -> int:
    """The size of the next request: the API's count up to the anchor, the estimate after it."""
    if anchor is not None and 0 < anchor.messages <= len(view):
        return anchor.tokens + sum(message_tokens(m) for m in view[anchor.messages :])
    return tools_tokens(tools) + sum(message_tokens(m) for m in view)


@dataclass(frozen=True)
class Fold:
    """One compaction: the prompt stays, `folded` joins the summary, `kept` stays verbatim."""

    prompt: list[ChatMessage]
    previous_summary: str | None
    folded: list[ChatMessage]
    kept: list[ChatMessage]
    request: ChatMessage | None = None  # the current turn's request, when the fold reached into its turn


def plan_fold(messages: list[ChatMessage], budget: int, keep_request: bool = False) -> Fold | None:
    """Fold the oldest messages so the verbatim rest, whole turns where possible, takes at most
    KEEP_SHARE of the budget (when even the latest step is bigger, keep just that step); None
    when nothing can be folded. With keep_request, a fold that reaches into the current turn keeps
    the turn's request word for word in the head (the archive keeps it in its place)."""
    head = head_size(messages)
    body = messages[head:]
    cuts = [i for i in range(1, len(body)) if body[i].role != "tool"]
    if not cuts:
        return None
    view = model_view(body, budget)
    suffix = [0] * (len(view) + 1)
    for i in range(len(view) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + message_tokens(view[i])
    fitting = [i for i in cuts if suffix[i] <= budget * KEEP_SHARE]
    # Whole turns when they fit (the cut before a user message), else the most that fits.
    turns = [i for i in fitting if body[i].role == "user"]
    chosen = turns[0] if turns else (fitting[0] if fitting else cuts[-1])
    previous = next((m.content for m in messages[:head] if is_summary(m)), None)
    if previous is not None and previous.startswith(SUMMARY_HEADER):
        previous = previous[len(SUMMARY_HEADER) :].strip()
    notes = [m for m in messages[:head] if is_request_note(m)]
    return Fold(
        prompt=[m for m in messages[:head] if not (is_summary(m) or is_request_note(m))],
        previous_summary=previous,
        folded=body[:chosen],
        kept=body[chosen:],
        request=_turn_request(body, chosen, notes) if keep_request else None,
    )


def _turn_request(body: list[ChatMessage], chosen: int, notes: list[ChatMessage]) -> ChatMessage | None:
    """The note to keep: the last request when it is folded now, the head's note when the turn's
    request was folded before, none when the request stays among the kept messages."""
    last_user = next((i for i in range(len(body) - 1, -1, -1) if body[i].role == "user"), None)
    if last_user is None:
        return notes[-1] if notes else None
    if last_user >= chosen:
        return None
    text = body[last_user].content or ""
    return ChatMessage(role="system", name=REQUEST_NAME, content=f"{REQUEST_HEADER}\n{text}")


def summary_request(fold: Fold, budget: int) -> list[ChatMessage]:
    """The separate "summarise" request: instructions, the summary so far, the messages to fold
    (each clipped so the request stays within the budget)."""
    per_message = max(MIN_CLIP_CHARS / CHARS_PER_TOKEN, budget * SUMMARY_INPUT_SHARE / max(1, len(fold.folded)))
    lines = [_transcript_line(m, per_message) for m in fold.folded]
    text = ""
    if fold.previous_summary:
        text = f"Summary so far:\n{clip(fold.previous_summary, budget * SUMMARY_SHARE)}\n\n"
    text += "Messages to fold into the summary:\n" + "\n".join(lines)
    return [ChatMessage(role="system", content=SUMMARY_INSTRUCTIONS), ChatMessage(role="user", content=text)]


def _transcript_line(message: ChatMessage, max_tokens: float) -> str:
    content = clip(message.content or "", max_tokens)
    if message.role == "tool":
        return f"tool {message.name or ''} [{message.tool_call_id}] returned: {content}"
    calls = "".join(f"\n  called {c.name}({clip(c.arguments, max_tokens)}) [{c.id}]" for c in message.tool_calls)
    return f"{message.role}: {content}{calls}"


def is_summary_request(wire_messages: list[dict[str, Any]]) -> bool:
    """Tells a summarise request from a reply request, for scripted models and logs."""
    return bool(wire_messages) and str(wire_messages[0].get("content") or "").startswith(SUMMARY_REQUEST_MARK)


def fallback_summary(fold: Fold, reason: str) -> str:
    """When the model cannot summarise, the person's own requests stand in for the summary."""
    asked = [clip(m.content or "", 60) for m in fold.folded if m.role == "user"][-20:]
    parts = [f"(No summary: the model could not write one: {clip(reason, 60)}.)"]
    if fold.previous_summary:
        parts.append(clip(fold.previous_summary, 400))
    if asked:
        parts.append("Earlier requests of the person: " + " | ".join(asked))
    return "\n".join(parts)


def compacted(fold: Fold, summary: str) -> list[ChatMessage]:
    note = ChatMessage(role="system", name=SUMMARY_NAME, content=f"{SUMMARY_HEADER}\n{summary.strip()}")
    return [*fold.prompt, note, *([fold.request] if fold.request else []), *fold.kept]


def tool_results_clipped(view: list[ChatMessage], budget: int) -> list[ChatMessage]:
    """A view still over the budget (its summary could not be written yet) with its tool results
    clipped evenly until it fits: the messages stay, their long outputs go."""
    over = sum(message_tokens(m) for m in view) - budget
    results = [m for m in view if m.role == "tool"]
    if over <= 0 or not results:
        return view
    room = sum(message_tokens(m) for m in results) - over
    share = max(MIN_CLIP_CHARS / CHARS_PER_TOKEN, room / len(results))
    return [_clipped(m, share) if m.role == "tool" else m for m in view]


def learned_budget(budget: int, refused_tokens: int) -> int:
    """A model that refused `refused_tokens` has a smaller window than the budget assumed."""
    return max(MIN_BUDGET_TOKENS, min(budget, int(refused_tokens * LEARN_SHARE)))
