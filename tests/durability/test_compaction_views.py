"""People still read the whole transcript after compactions: `show`, `watch` and the UI put the
archived messages, the compaction and the model's summary in order. Runs the demo model, whose
answers to summarise requests are scripted and say so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from cli.watch import _Follower
from tests.support.failure_support import address_of
from tests.support.helpers import new_workspace
from tests.support.stack import Stack, make_stack
from tests.support.ui_fixtures import api_client


@pytest.fixture
def stack(tmp_path: Path, client: Client) -> Iterator[Stack]:
    system = make_stack(tmp_path, address_of(client))
    system.env["CONTEXT_BUDGET_TOKENS"] = "3000"
    yield system
    system.stop()


async def test_show_watch_and_the_ui_read_the_archive_and_the_summary(stack: Stack, client: Client) -> None:
    planned, ws = new_workspace(stack.settings)
    (ws / "big.txt").write_text("sixteen kilobytes of notes\n" * 600)
    stack.start_worker()
    cid = stack.cli_ok("start", "--id", planned, "read big.txt").stdout.strip()
    stack.wait_status(cid, "idle")
    for _ in range(3):
        stack.cli_ok("send", cid, "read big.txt")
        stack.wait_status(cid, "idle")

    state = stack.show(cid)
    assert state["archived"] and len(state["archived"]) == state["archived_messages"]
    summary = state["messages"][1]
    assert summary["name"] == "conversation_summary" and "(scripted demo model)" in summary["content"]
    text = stack.cli_ok("show", cid).stdout
    assert f"-- the {len(state['archived'])} message(s) above were compacted" in text
    assert "summary for the model: Summary of the earlier part" in text
    assert text.count("user: read big.txt") == 4, "every user message is shown once, archived or not"

    async with api_client(stack.settings, client) as http:
        view = (await http.get(f"/api/conversations/{cid}")).json()
    assert view["archived"] == state["archived"]
    assert view["messages"][0] == summary, "the UI shows the summary, not the system prompt"

    assert stack.worker is not None
    stack.worker.stop()  # with no worker: `show` prints the archive, `watch` the events from the start
    offline = stack.cli_ok("show", cid, "--timeout", "1").stdout
    assert "user: read big.txt" in offline and "more recent messages need a running worker" in offline
    watched = stack.cli_ok("watch", cid).stdout
    compacted = [line for line in watched.splitlines() if "conversation.compacted" in line]
    assert len(compacted) >= 1 and '"folded_messages"' in compacted[0]


def message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": [], **extra}


def test_watch_prints_each_message_once_across_a_compaction(capsys: pytest.CaptureFixture[str]) -> None:
    follower = _Follower(session=None, conversation_id="c")  # type: ignore[arg-type]
    system = message("system", "prompt")
    follower.print_messages(
        {"messages": [system, message("user", "one"), message("assistant", "first")], "archived_messages": 0}
    )
    summary = message("system", "what happened", name="conversation_summary")
    after = [system, summary, message("assistant", "first"), message("user", "two"), message("assistant", "second")]
    follower.print_messages({"messages": after, "archived_messages": 1})
    assert capsys.readouterr().out.splitlines() == [
        "user: one",
        "assistant: first",
        "user: two",
        "assistant: second",
    ]
