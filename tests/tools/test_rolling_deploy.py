"""A rolling deploy under load strands nothing, loses nothing and runs nothing twice.

The many-hosts test (test_many_hosts.py) with a deploy in place of the kills: three worker hosts
(each its own workspace, one PostgreSQL, one shared payload store, workspace saves on), two UI
processes and the CLI. Each conversation's user message is a marker, and the model asks to run a
shell command that appends it to marks.txt in the conversation's workspace. A first message is
approved at once on the host the conversation was pinned to (so each workspace holds a file and a
save); then a second message asks again, and these requests are decided three times at once (UI
one, UI two, the CLI) while each host in turn gets SIGTERM (the worker alone, as a rollout sends
it) and, once it exited, is replaced by a worker with a NEW host name and a new, empty workspace;
the next host goes only when that replacement is ready. Six conversations (two a host) in `make test`, three
hundred under `make test-scale` (the same checks).

At the end: every turn is idle (0 stuck); every request had one winner of its three doors and the
read model shows every approval decided and its tool done (0 lost); history shows each approved
tool ran once, and the execution ledger holds one finished run per request, none "outcome unknown"
(only SIGTERM was sent, with a grace long enough); the workspace of the host a conversation's
second tool ran on holds exactly its two markers, in order (the first restored from the save when
the conversation had moved), and no other workspace holds more than the first run left there; a
tool that ran after a move tells the model so and that its files were restored; every move was a
hand-over (`handed_over`), none the fallback after HOST_GONE_SECONDS (`host_gone`), and each
conversation's moves chain from the host it was pinned to, to the host it is on; `starter.py hosts
--json` shows the stopped hosts with no conversation and no waiting tool; and a projection rebuild
from Temporal changes no row.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from core.tool_run_model import ToolRequest, ToolResult
from demo_model.server import text_reply, tool_reply
from doors.control import get_state, send_decision, send_message, start_conversation
from maintenance.rebuild import rebuild_projection
from tests.support.failure_support import address_of
from tests.support.helpers import eventually, rows, tool_messages, workspace_of
from tests.support.processes import REPO_ROOT, free_port, process_env, wait_for_port
from tests.support.scale import at_scale
from tests.support.scripts import ScriptedModel, last_role, tool_results
from tests.tools.host_support import Hosts, hosts_listing, terminate
from tests.tools.test_many_hosts import (  # noqa: F401 (many_hosts_settings: the fixture)
    _report_stuck,
    decide_three_ways,
    many_hosts_settings,
)

HOSTS = ("host-a", "host-b", "host-c")  # replaced in this order, each by f"{host}-2"
NEW_HOSTS = tuple(f"{host}-2" for host in HOSTS)
GONE_SECONDS = 30  # a hand-over missed would still move (as `host_gone`) well within the budget
GRACE_SECONDS = 20  # WORKER_STOP_GRACE_SECONDS: an `echo` finishes far within it
EXECUTE = "execute_tool"
DOORS = {"ui-one", "ui-two", "cli"}
SETUP = "setup"  # who approves the first requests, before the deploy
HANDED_OVER = "its worker stopped and handed the conversation over"
BUDGET = 2400.0  # seconds for the whole test, below its timeout, so a stall fails with what is stuck


def mark_each_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Each user message is a marker: append it to marks.txt, then report the result."""
    if last_role(messages) == "user":
        marker = str(messages[-1]["content"])
        return tool_reply((f"call_{marker}", "run_shell", {"command": f"echo {marker} >> marks.txt"}))
    return text_reply("done: " + " | ".join(str(m["content"]) for m in tool_results(messages)))


@dataclass(frozen=True)
class Run:
    """One execute_tool that ran (not a `wrong_host` answer), as the conversation's history has it."""

    request_id: str
    host: str
    result: ToolResult


# 300 conversations, their second requests decided three ways while the three hosts are replaced in
# turn: about 430 s alone on two cores (`make test-scale` runs it apart, marker `many_processes`),
# and over 1,300 s beside the other scale tests in a loaded CI run. Its waits share one budget below
# the timeout: a stall fails with the conversations still waiting, where they are, and the logs.
@pytest.mark.timeout(2700)
@pytest.mark.many_processes
@at_scale("conversations", quick=6, full=300)
async def test_a_rolling_deploy_while_people_decide_strands_nothing_and_runs_each_tool_once(
    client: Client,
    many_hosts_settings: Settings,  # noqa: F811
    model: ScriptedModel,
    tmp_path: Path,
    conversations: int,
) -> None:
    settings = replace(many_hosts_settings, host_gone_seconds=GONE_SECONDS)
    model.behaviour = mark_each_message
    address = address_of(client)
    extra = {
        "HOST_GONE_SECONDS": str(GONE_SECONDS),
        "WORKSPACE_SAVES": "on",
        "WORKER_STOP_GRACE_SECONDS": str(GRACE_SECONDS),
    }
    # process_env passes PAYLOAD_STORE (the session's payload directory) to every process: the
    # stopping hosts save there and the new ones restore from there.
    hosts = Hosts(settings, client, tmp_path, **extra)
    ui_ports = [free_port(), free_port()]
    uis = [
        subprocess.Popen(
            [sys.executable, "starter.py", "ui"],
            cwd=REPO_ROOT,
            env=process_env(settings, address, UI_PORT=str(port), **extra),
            stdout=(tmp_path / f"ui-{port}.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        for port in ui_ports
    ]
    cli_env = process_env(settings, address, **extra)
    try:
        # All three poll before the first conversation picks a host.
        await asyncio.gather(*(asyncio.to_thread(hosts.start, host) for host in HOSTS))
        for port in ui_ports:
            await asyncio.to_thread(wait_for_port, port)
        phases = [("start", time.monotonic())]  # where the test's time goes, printed as it goes
        give_up = phases[0][1] + BUDGET

        def passed(phase: str) -> None:
            phases.append((phase, time.monotonic()))
            print(f"{phase}: {phases[-1][1] - phases[-2][1]:.0f}s", flush=True)

        def left() -> float:
            return max(give_up - time.monotonic(), 1.0)

        markers = [f"mark-{i:03d}" for i in range(conversations)]
        again = {marker: f"{marker}-again" for marker in markers}
        ids = {marker: await start_conversation(client, settings, marker) for marker in markers}
        marker_of = {cid: marker for marker, cid in ids.items()}

        async def all_waiting() -> list[dict[str, Any]]:
            """Every conversation has one undecided request and a host (the host is picked first)."""
            found = rows(
                settings.approvals_db,
                "SELECT a.request_id, a.conversation_id, c.tool_host FROM ui_pending_approvals a"
                " JOIN ui_conversations c ON c.conversation_id = a.conversation_id WHERE a.decision IS NULL",
            )
            return found if len(found) == conversations and all(r["tool_host"] for r in found) else []

        async def all_idle(tools: int) -> dict[str, Any]:
            states = {}
            for marker, cid in ids.items():
                state = await get_state(client, cid)
                if state.turn_status != "idle" or len(tool_messages(state)) < tools:
                    return {}
                states[marker] = state
            return states

        async def wait_all(check: Any, goal: str) -> Any:
            try:
                return await eventually(check, timeout=left(), interval=1.0)
            except AssertionError:
                await _report_stuck(client, ids, settings, tmp_path, goal)
                raise

        # Before the deploy: each conversation's first tool runs on the host it was pinned to.
        first = await wait_all(all_waiting, "awaiting_approval")
        setup_gate = asyncio.Semaphore(16)

        async def approve(request_id: str) -> None:
            async with setup_gate:
                decision = DecisionInput(request_id=request_id, decision="allow", decided_by=SETUP)
                await send_decision(client, settings, decision)

        await asyncio.gather(*(approve(row["request_id"]) for row in first))
        await wait_all(lambda: all_idle(1), "idle")
        for marker, cid in ids.items():
            await send_message(client, cid, again[marker])
        waiting = await wait_all(all_waiting, "awaiting_approval")
        requests = [row["request_id"] for row in waiting]
        pinned = {marker_of[row["conversation_id"]]: row["tool_host"] for row in waiting}
        spread = set(pinned.values())
        assert spread <= set(HOSTS) and len(spread) >= 2, f"the conversations spread over the hosts: {spread}"
        passed("every first tool ran, every second request waiting")

        ui_urls = [f"http://127.0.0.1:{port}" for port in ui_ports]
        gate = asyncio.Semaphore(4)
        outcomes: dict[str, list[str]] = {}
        exits: dict[str, int | None] = {}

        async def decide(request_id: str) -> None:
            async with gate:
                outcomes[request_id] = await decide_three_ways(ui_urls, cli_env, request_id)

        async def replace_host(old: str) -> None:
            """SIGTERM to the worker alone; once it exited, its replacement under a new name and an
            empty workspace, ready (polling) before this returns."""
            worker = hosts.workers[old]
            assert worker.proc is not None
            answered, began = len(outcomes), time.monotonic()
            terminate(worker)
            exits[old] = await asyncio.to_thread(worker.proc.wait, GRACE_SECONDS + 120)
            await asyncio.to_thread(hosts.start, f"{old}-2")
            print(
                f"{old} replaced by {old}-2 in {time.monotonic() - began:.0f}s,"
                f" {len(outcomes) - answered} decisions answered meanwhile",
                flush=True,
            )

        async def deploy_step(old: str, chunk: list[str]) -> None:
            """Half of this third's decisions go out; at the first answer the host is stopped, and
            the other half follow while it stops, hands over and is replaced."""
            half = max(len(chunk) // 2, 1)
            early = [asyncio.ensure_future(decide(r)) for r in chunk[:half]]
            await asyncio.wait(early, return_when=asyncio.FIRST_COMPLETED)
            deploying = asyncio.ensure_future(replace_host(old))
            late = [asyncio.ensure_future(decide(r)) for r in chunk[half:]]
            await asyncio.gather(*early, *late, deploying)

        async def rolling_deploy() -> None:
            n = len(requests)
            for i, old in enumerate(HOSTS):
                await deploy_step(old, requests[i * n // len(HOSTS) : (i + 1) * n // len(HOSTS)])

        try:
            await asyncio.wait_for(rolling_deploy(), left())
        except TimeoutError:
            await _report_stuck(client, ids, settings, tmp_path, "idle")
            raise AssertionError(f"the deploy and the decisions were not done within {BUDGET:.0f}s") from None
        passed("every host replaced, every request decided three ways")
        unclean = {host: hosts.log(host)[-2000:] for host, code in exits.items() if code != 0}
        assert exits == dict.fromkeys(HOSTS, 0), f"each stopped worker exited cleanly: {exits}; {unclean}"
        assert sorted(outcomes) == sorted(requests)
        for request_id, outcome in outcomes.items():
            assert sorted(outcome) == ["refused", "refused", "won"], (request_id, outcome)

        states = await wait_all(lambda: all_idle(2), "idle")
        passed("every turn idle")

        every_host = (*HOSTS, *NEW_HOSTS)
        request_ids: list[str] = []
        moved_first = on_new = 0
        for marker, cid in ids.items():
            runs = await _runs(client, cid)
            before, after = runs[0], runs[-1]
            assert len(runs) == 2 and before.request_id != after.request_id, (marker, cid, runs)
            request_ids += [before.request_id, after.request_id]
            assert before.host == pinned[marker] and after.host in every_host, (marker, cid, runs)
            told = tool_messages(states[marker])
            assert len(told) == 2 and not any("Outcome unknown" in text for text in told), (marker, told)
            assert not told[0].startswith("Note:"), (marker, told[0])
            lines = {host: _marks(workspace_of(hosts.workspace(host), cid)) for host in every_host}
            # The host the second tool ran on holds both markers, the first restored after a move;
            # the host of the first run keeps what it wrote; no other host ran a tool for it.
            expected: dict[str, list[str]] = {host: [] for host in every_host} | {
                before.host: [marker],
                after.host: [marker, again[marker]],
            }
            assert lines == expected, (marker, cid, before.host, after.host, lines)
            if after.host == before.host:
                assert not told[1].startswith("Note:"), (marker, told[1])
                continue
            moved_first += 1
            on_new += after.host in NEW_HOSTS
            assert told[1].startswith("Note: this conversation moved from host "), (marker, told[1])
            assert f" to {after.host} ({HANDED_OVER}). Its files were restored as of the save at " in told[1], (
                marker,
                after.host,
                told[1],
            )
        print(f"{moved_first}/{conversations} second tools ran after a move, {on_new} on a new host", flush=True)

        ledger = {
            row["request_id"]: row
            for row in rows(settings.ledger_db, "SELECT request_id, state, result_json FROM tool_executions")
        }
        for request_id in request_ids:
            row = ledger.get(request_id)
            assert row is not None and row["state"] == "finished", (request_id, row)
            assert not json.loads(row["result_json"]).get("outcome_unknown"), (request_id, row)
        passed("each tool ran once")

        # The last hand-over's moves may still be landing: the stopped hosts empty first (the
        # picked host is noted at once), then the moves' events and the rows catch up.
        async def hosts_left_empty() -> dict[str, dict[str, Any]]:
            listed = await hosts_listing(settings, client)
            stopped = all(
                listed[host]["stopped_at"] and (listed[host]["conversations"], listed[host]["waiting_tools"]) == (0, 0)
                for host in HOSTS
            )
            running = all(listed[host]["stopped_at"] is None for host in NEW_HOSTS)
            on_new_hosts = sum(listed[host]["conversations"] for host in NEW_HOSTS)
            return listed if stopped and running and on_new_hosts == conversations else {}

        try:
            await eventually(hosts_left_empty, timeout=min(60, left()), interval=1.0)
        except AssertionError:
            print(await hosts_listing(settings, client), flush=True)
            raise
        for host in HOSTS:
            assert "handed over to the other hosts" in hosts.log(host), host

        async def caught_up() -> dict[str, list[dict[str, Any]]]:
            found = _projection(settings)
            idle = all((r["turn_status"], r["pending_count"]) == ("idle", 0) for r in found["conversations"])
            done = all(r["execution_state"] == "done" for r in found["approvals"])
            on_host = {r["conversation_id"]: r["tool_host"] for r in found["conversations"]}
            moves = _moves(settings)
            landed = all(moves.get(cid) and moves[cid][-1]["to_host"] == on_host.get(cid) for cid in ids.values())
            complete = len(found["conversations"]) == conversations and len(found["approvals"]) == 2 * conversations
            return found if idle and done and landed and complete else {}

        try:
            projected = await eventually(caught_up, timeout=min(120, left()), interval=1.0)
        except AssertionError:
            print(_projection(settings), _moves(settings), sep="\n", flush=True)
            raise
        passed("projection caught up")
        approvals = {row["request_id"]: row for row in projected["approvals"]}
        assert sorted(approvals) == sorted(request_ids)
        assert all(row["decision"] == "allow" and row["resolved_at"] for row in approvals.values())
        assert {approvals[r]["decided_by"] for r in requests} <= DOORS
        assert {row["decided_by"] for r, row in approvals.items() if r not in requests} == {SETUP}
        on_host = {row["conversation_id"]: row["tool_host"] for row in projected["conversations"]}

        moves = _moves(settings)
        whys = {move["why"] for chain in moves.values() for move in chain}
        assert whys == {"handed_over"}, f"every move a hand-over, none after HOST_GONE_SECONDS: {whys}"
        for marker, cid in ids.items():
            hops = [pinned[marker]] + [move["to_host"] for move in moves.get(cid, [])]
            assert [move["from_host"] for move in moves.get(cid, [])] == hops[:-1], (marker, cid, moves.get(cid))
            assert hops[-1] == on_host[cid] and on_host[cid] in NEW_HOSTS, (marker, cid, hops, on_host[cid])
        print(f"{sum(map(len, moves.values()))} moves, all handed over", flush=True)

        report = await rebuild_projection(client, settings)
        assert (report.pending_restored, report.stale_resolved, report.unreachable) == (0, 0, [])
        assert _projection(settings) == projected
        passed("checked and rebuilt")
    finally:
        for ui in uis:
            ui.terminate()
            ui.wait(timeout=30)
        hosts.stop_all()


def _marks(workspace: Path) -> list[str]:
    """The lines of one conversation's marks.txt on one host."""
    marks = workspace / "marks.txt"
    return marks.read_text().split() if marks.exists() else []


async def _runs(client: Client, conversation_id: str) -> list[Run]:
    """Each execute_tool of the conversation that ran, in history's order, with the host it ran on:
    an attempt sent with `run_on` to the shared queue and answered `wrong_host` by a worker of
    another host ran nothing, and is left out."""
    history = await client.get_workflow_handle(conversation_id).fetch_history()
    converter = client.data_converter
    scheduled: dict[int, ToolRequest] = {}
    queues: dict[int, str] = {}
    runs = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name == EXECUTE:
                [request] = await converter.decode(list(attributes.input.payloads), [ToolRequest])
                scheduled[event.event_id] = request
                queues[event.event_id] = request.run_on or attributes.task_queue.name
        elif event.HasField("activity_task_completed_event_attributes"):
            completed = event.activity_task_completed_event_attributes
            if completed.scheduled_event_id not in scheduled:
                continue
            [result] = await converter.decode(list(completed.result.payloads), [ToolResult])
            if not result.wrong_host:
                request = scheduled[completed.scheduled_event_id]
                host = queues[completed.scheduled_event_id].rpartition("@")[2]
                runs.append(Run(request.request_id, host, result))
    return runs


def _moves(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """Each conversation's `conversation.moved` events, in the order its workflow made them."""
    moves: dict[str, list[dict[str, Any]]] = {}
    for row in rows(
        settings.approvals_db,
        "SELECT conversation_id, payload_json FROM ui_events WHERE event_type = 'conversation.moved'",
    ):
        moves.setdefault(row["conversation_id"], []).append(json.loads(row["payload_json"]))
    return {cid: sorted(chain, key=lambda move: move["at"]) for cid, chain in moves.items()}


def _projection(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    return {
        "conversations": rows(
            settings.approvals_db,
            "SELECT conversation_id, turn_status, pending_count, tool_host FROM ui_conversations"
            " ORDER BY conversation_id",
        ),
        "approvals": rows(
            settings.approvals_db,
            "SELECT request_id, decision, decided_by, resolved_at, execution_state FROM ui_pending_approvals"
            " ORDER BY request_id",
        ),
    }
