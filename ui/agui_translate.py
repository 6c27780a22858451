"""What one AG-UI run shows of a conversation: its streamed text and the new part of its transcript.

Text comes from the read model's `message.delta` events as the model writes it (one AG-UI text
message per model call and attempt; a retried call ends the old message and starts anew). Tool
calls and their results come from the conversation's own transcript, which is read before the
events each time: a reply in the transcript has had all its pieces written, so the k-th reply
is matched to the oldest ended stream that wrote exactly its text, and its tool calls name that
stream's text message as their parent. A reply with no such stream (streaming off, or a stream
that ended before the run began) is sent whole from the transcript.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from core.chat_model import ChatMessage
from storage.stream_events import EVENT_MESSAGE_DELTA


class RunTranslator:
    def __init__(self, run_id: str, transcript: list[ChatMessage]) -> None:
        """transcript: the conversation's messages when the run began (none of them are sent)."""
        self._run_id = run_id
        self._read = len(transcript)
        self._open: dict[str, str] = {}  # stream key (turn, call) -> the text message id being sent
        self._texts: dict[str, str] = {}  # stream key -> the text it wrote so far
        self._ended: list[tuple[str | None, str]] = []  # finished streams: text message id (None: no text), text
        self._replies_seen = 0
        self._results_sent: set[str] = {m.tool_call_id for m in transcript if m.role == "tool" and m.tool_call_id}

    @property
    def has_open_text(self) -> bool:
        return bool(self._open)

    def deltas(self, events: list[dict[str, Any]]) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for event in events:
            if event["event_type"] == EVENT_MESSAGE_DELTA:
                out.extend(self._delta(event["payload"]))
        return out

    def _delta(self, piece: dict[str, Any]) -> list[BaseEvent]:
        key = f"{piece.get('turn_id')}:{piece.get('call_id')}"
        message_id = f"msg:{key}:{piece.get('attempt')}"
        out: list[BaseEvent] = []
        current = self._open.get(key)
        if current is not None and current != message_id:  # a new attempt replaces the old one's text
            out.append(TextMessageEndEvent(message_id=current))
            del self._open[key]
            current = None
        if piece.get("restarted"):
            self._texts[key] = ""
        text = str(piece.get("text") or "")
        if text:
            if current is None:
                out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
                self._open[key] = current = message_id
            out.append(TextMessageContentEvent(message_id=message_id, delta=text))
            self._texts[key] = self._texts.get(key, "") + text
        if piece.get("done"):
            if current is not None:
                out.append(TextMessageEndEvent(message_id=current))
                del self._open[key]
            self._ended.append((current, self._texts.pop(key, "")))
        return out

    def transcript(self, messages: list[ChatMessage]) -> list[BaseEvent]:
        """Events for the messages added since the last call; a compaction that shortened the
        transcript starts the count again from its end."""
        if len(messages) < self._read:
            self._read = len(messages)
        out: list[BaseEvent] = []
        for message in messages[self._read :]:
            if message.role == "assistant":
                out.extend(self._reply(message))
            elif message.role == "tool" and message.tool_call_id and message.tool_call_id not in self._results_sent:
                self._results_sent.add(message.tool_call_id)
                out.append(
                    ToolCallResultEvent(
                        message_id=f"result:{message.tool_call_id}",
                        tool_call_id=message.tool_call_id,
                        content=message.content or "",
                        role="tool",
                    )
                )
        self._read = len(messages)
        return out

    def _streamed(self, text: str) -> tuple[bool, str | None]:
        """Whether a stream wrote this reply's text, and its text message; earlier unmatched streams
        (a compaction's summary, say) are dropped with it."""
        for position, (message_id, streamed) in enumerate(self._ended):
            if streamed == text:
                del self._ended[: position + 1]
                return True, message_id
        return False, None

    def _reply(self, message: ChatMessage) -> list[BaseEvent]:
        index, self._replies_seen = self._replies_seen, self._replies_seen + 1
        out: list[BaseEvent] = []
        streamed, parent = self._streamed(message.content or "")
        if not streamed and message.content:
            parent = f"msg:{self._run_id}:reply:{index}"
            out.append(TextMessageStartEvent(message_id=parent, role="assistant"))
            out.append(TextMessageContentEvent(message_id=parent, delta=message.content))
            out.append(TextMessageEndEvent(message_id=parent))
        for call in message.tool_calls:
            out.append(ToolCallStartEvent(tool_call_id=call.id, tool_call_name=call.name, parent_message_id=parent))
            out.append(ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments or "{}"))
            out.append(ToolCallEndEvent(tool_call_id=call.id))
        return out


def encode(event: BaseEvent) -> str:
    """One Server-Sent Event, as the AG-UI HTTP transport reads it (camelCase, no empty fields)."""
    return f"data: {event.model_dump_json(by_alias=True)}\n\n"
