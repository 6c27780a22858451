"""The pinning design, for comparison: each waiting agent is a coroutine parked on an asyncio.Event.

It asks the same scripted model through the same openai client, keeps the same transcript
(system prompt, user message, assistant message with the tool call, approval record) in memory,
and waits. Nothing is written anywhere, so a restart finds nothing to resume.

Run as `python -m bench.pinned --model-url URL`; commands on stdin, one per line:
`park N` (answers `parked N`), `count` (answers `holding N`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime, timedelta

import openai

from activities.llm import _wire_message
from bench import script
from core.chat_model import ChatMessage, ToolCall
from core.conversation_model import ApprovalRecord, request_id_for
from core.tool_specs import BUILTIN_CATALOG
from workflows.conversation import SYSTEM_PROMPT


class PinnedAgent:
    def __init__(self, client: openai.AsyncOpenAI, conversation_id: str) -> None:
        self.client = client
        self.conversation_id = conversation_id
        self.messages = [
            ChatMessage(role="system", content=SYSTEM_PROMPT),
            ChatMessage(role="user", content=script.user_text(conversation_id)),
        ]
        self.decided = asyncio.Event()
        self.pending: ApprovalRecord | None = None

    async def run(self, gate: asyncio.Semaphore, parked: asyncio.Queue[str]) -> None:
        async with gate:
            completion = await self.client.chat.completions.create(
                model="scripted-bench",
                messages=[_wire_message(m) for m in self.messages],  # type: ignore[misc]
                tools=BUILTIN_CATALOG.schemas(),  # type: ignore[arg-type]
            )
        reply = completion.choices[0].message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
            for c in reply.tool_calls or []
            if c.type == "function"
        ]
        self.messages.append(ChatMessage(role="assistant", content=reply.content, tool_calls=calls))
        now = datetime.now(UTC)
        self.pending = ApprovalRecord(
            request_id=request_id_for(self.conversation_id, calls[0].id),
            conversation_id=self.conversation_id,
            turn_id="turn_1",
            tool_call_id=calls[0].id,
            tool_name=calls[0].name,
            permission_type="execute",
            arguments={"command": script.shell_command(self.conversation_id)},
            created_at=now,
            expires_at=now + timedelta(days=7),
        )
        await parked.put(self.conversation_id)
        await self.decided.wait()  # pinned here, in this process's memory, until someone sets it


async def main(model_url: str) -> None:
    client = openai.AsyncOpenAI(base_url=model_url, api_key="bench-key", max_retries=0)
    agents: list[PinnedAgent] = []
    tasks: list[asyncio.Task[None]] = []
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line:
            return
        if line.startswith("park "):
            count = int(line.split()[1])
            parked: asyncio.Queue[str] = asyncio.Queue()
            gate = asyncio.Semaphore(50)
            for _ in range(count):
                agent = PinnedAgent(client, f"pinned-{len(agents):05d}")
                agents.append(agent)
                tasks.append(asyncio.create_task(_guarded(agent, gate, parked)))
            failures = [tag for tag in [await parked.get() for _ in range(count)] if tag.startswith("error")]
            print(f"parked {count}" if not failures else f"{failures[0]} ({len(failures)} failed)", flush=True)
        elif line == "count":
            print(f"holding {sum(1 for a in agents if a.pending is not None and not a.decided.is_set())}", flush=True)


async def _guarded(agent: PinnedAgent, gate: asyncio.Semaphore, parked: asyncio.Queue[str]) -> None:
    """A failed agent reports itself, so the bench never waits for one that will not park."""
    try:
        await agent.run(gate, parked)
    except Exception as err:
        await parked.put(f"error {agent.conversation_id}: {type(err).__name__}: {err}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-url", required=True)
    asyncio.run(main(parser.parse_args().model_url))
