"""Scenario 6: the same approval in LangGraph, with `interrupt()` and its SQLite checkpointer.

The graph is the usual one: a model node (same scripted model, same openai client, real HTTP)
and a tools node that asks a person with `interrupt()` before running the same shell command.
The model call has its own node, so a resume does not re-ask it (an interrupt in its node would).
Resume latency runs from `invoke(Command(resume=...))` to the moment the checkpointer has stored
the tool's result (its put_writes returned), so it matches "result recorded" on our side.
LangGraph re-runs a node from its start on resume: we count how often the code before the
interrupt runs, and how often the model is asked.
"""

from __future__ import annotations

import asyncio
import json
import operator
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import openai
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from bench import script
from bench.drive import new_ids
from bench.harness import Bench, ran_counts, say
from bench.stats import summary_ms
from core.tool_specs import BUILTIN_CATALOG
from workflows.conversation import SYSTEM_PROMPT


class State(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


class RecordingSaver(SqliteSaver):
    """LangGraph's own SQLite checkpointer, noting when a tool result has been stored."""

    stored_at: dict[str, float]

    def put_writes(self, config: RunnableConfig, writes: Any, task_id: str, task_path: str = "") -> None:
        super().put_writes(config, writes, task_id, task_path)
        for channel, value in writes:
            if channel == "messages" and any(m.get("role") == "tool" for m in value):
                self.stored_at.setdefault(str(config["configurable"]["thread_id"]), time.perf_counter())


def build_graph(saver: SqliteSaver, model: openai.OpenAI, workspace: Path, before: Counter[str]) -> Any:
    def call_model(state: State) -> dict[str, Any]:
        reply = (
            model.chat.completions.create(
                model="scripted-bench",
                messages=state["messages"],  # type: ignore[arg-type]
                tools=BUILTIN_CATALOG.schemas(),  # type: ignore[arg-type]
            )
            .choices[0]
            .message
        )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in reply.tool_calls
                if c.type == "function"
            ]
        return {"messages": [message]}

    def run_tools(state: State, config: RunnableConfig) -> dict[str, Any]:
        call = state["messages"][-1]["tool_calls"][0]
        before[str(config["configurable"]["thread_id"])] += 1  # the code before the interrupt
        decision = interrupt({"tool": call["function"]["name"], "arguments": call["function"]["arguments"]})
        if decision != "allow":
            return {"messages": [{"role": "tool", "tool_call_id": call["id"], "content": "Not run: denied."}]}
        command = json.loads(call["function"]["arguments"])["command"]
        done = subprocess.run(command, shell=True, cwd=workspace, capture_output=True, text=True, check=False)
        content = f"exit code {done.returncode}\n{done.stdout}"
        return {"messages": [{"role": "tool", "tool_call_id": call["id"], "content": content}]}

    def route(state: State) -> str:
        return "tools" if state["messages"][-1].get("tool_calls") else END

    builder = StateGraph(State)
    builder.add_node("model", call_model)
    builder.add_node("tools", run_tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver)


def _measure(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("langgraph")
    settings.workspace_dir.mkdir(parents=True)
    conn = sqlite3.connect(Path(settings.approvals_db).with_name("checkpoints.sqlite"), check_same_thread=False)
    saver = RecordingSaver(conn)
    saver.stored_at = {}
    before: Counter[str] = Counter()
    model = openai.OpenAI(base_url=bench.model.base_url, api_key="bench-key", max_retries=0)
    graph = build_graph(saver, model, settings.workspace_dir, before)
    ids = new_ids("lg", count)
    for tid in ids:
        first = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": script.user_text(tid)}]
        result = graph.invoke({"messages": first}, {"configurable": {"thread_id": tid}}, durability="sync")
        assert "__interrupt__" in result, f"{tid} did not stop at the approval"
    resumed, whole = [], []
    for tid in ids:
        t0 = time.perf_counter()
        graph.invoke(Command(resume="allow"), {"configurable": {"thread_id": tid}}, durability="sync")
        whole.append(time.perf_counter() - t0)
        resumed.append(saver.stored_at[tid] - t0)
    conn.close()
    ran = ran_counts(settings)
    asked = script.requests_per_tag(bench.model)
    bench.check("langgraph: approved tools ran once each", count, sum(1 for t in ids if ran.get(t) == 1))
    return {
        "approvals": count,
        "resume_to_tool_result_stored": summary_ms(resumed),
        "resume_to_turn_complete": summary_ms(whole),
        "code_before_interrupt_runs_per_approval": round(sum(before[t] for t in ids) / count, 2),
        "reruns_on_resume": sum(before[t] - 1 for t in ids),
        "model_requests_per_conversation": round(sum(asked[t] for t in ids) / count, 2),
        "model_reasked": sum(asked[t] for t in ids) - 2 * count,
        "durability": "sync",
    }


async def run(bench: Bench, count: int) -> dict[str, Any]:
    out = await asyncio.to_thread(_measure, bench, count)
    say(
        f"langgraph: resume p50 {out['resume_to_tool_result_stored']['p50_ms']} ms;"
        f" code before interrupt ran {out['code_before_interrupt_runs_per_approval']}x per approval"
    )
    return out
