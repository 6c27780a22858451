"""`doctor`: ask the configured model endpoint what a conversation will ask it, and say what works.

Four probes, each through the same request code the worker uses (activities/llm.py): a plain
reply, a tool call, the reply after a tool's result, and a streamed tool call. It prints one line
per probe and the settings the endpoint needs; it exits 0 when a conversation can work with the
current settings, 1 with one line on stderr saying why not.
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_OK, CliError
from cli.temporal import Session

if TYPE_CHECKING:
    from activities.llm import ModelEndpoint

PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_file",
        "description": "Write text to a file in the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
PROBE_ASK = "Write the word hello to the file notes.txt."


def _said(ok: bool, what: str, detail: str) -> None:
    print(f"{'ok' if ok else 'no':<3} {what}: {detail}")


async def doctor(args: argparse.Namespace, session: Session) -> int:
    from activities.llm import ModelEndpoint

    settings = session.settings
    logging.getLogger("activities.llm").setLevel(logging.ERROR)  # what it learns is printed below

    def endpoint(stream: bool) -> ModelEndpoint:
        return ModelEndpoint.of(settings, stream)

    print(f"model endpoint {settings.openai_base_url}, model {settings.llm_model}")
    whole, streaming = endpoint(stream=False), endpoint(stream=True)
    try:
        return await _probe(whole, streaming, settings.llm_stream)
    finally:
        await whole.close()
        await streaming.close()


async def _probe(whole: ModelEndpoint, streaming: ModelEndpoint, stream_setting: bool) -> int:
    """A plain reply, a tool call, a reply after the tool's result, then the same call streamed."""
    from temporalio.exceptions import ApplicationError

    from core.chat_model import ChatMessage

    ask = [ChatMessage(role="user", content=PROBE_ASK)]
    try:
        plain = await whole.reply([ChatMessage(role="user", content="Say hello.")], [])
        _said(bool(plain.content), "plain reply", repr((plain.content or "")[:60]))
        called = await whole.reply(ask, [PROBE_TOOL])
    except ApplicationError as err:
        raise CliError(f"the model endpoint cannot answer: {err.message}") from None
    if not called.tool_calls:
        _said(False, "tool call", f"answered with text: {(called.content or '')[:60]!r}")
        raise CliError("the model called no tool when offered one: its conversations could not use tools")
    _said(True, "tool call", ", ".join(f"{c.name}({c.arguments[:60]})" for c in called.tool_calls))
    result = [
        ChatMessage(role="tool", tool_call_id=c.id, content="Wrote 5 bytes to notes.txt") for c in called.tool_calls
    ]
    try:
        after = await whole.reply([*ask, called.message(), *result], [PROBE_TOOL])
    except ApplicationError as err:
        _said(False, "reply after the tool's result", err.message)
        raise CliError(f"the model endpoint refuses a conversation after a tool ran: {err.message}") from None
    _said(True, "reply after the tool's result", "text" if after.content else "another tool call")

    needs: list[str] = []
    try:
        streamed = await streaming.reply(ask, [PROBE_TOOL])
    except ApplicationError as err:
        _said(False, "streamed tool call", err.message)
        needs.append("LLM_STREAM=off")
    else:
        if not streaming.streaming:
            _said(False, "streamed tool call", "the endpoint does not stream (the worker finds out and asks whole)")
            needs.append("LLM_STREAM=off")
        elif not streamed.tool_calls:
            _said(False, "streamed tool call", "the stream carried no tool call")
            needs.append("LLM_STREAM=off")
        else:
            _said(True, "streamed tool call", ", ".join(c.name for c in streamed.tool_calls))
    print(f"settings it needs: {' '.join(needs) if needs else 'none beyond the defaults'}")
    if needs and stream_setting and streaming.streaming:
        raise CliError("streamed replies do not carry the tool calls: set LLM_STREAM=off")
    return EXIT_OK
