"""`starter.py watch --follow` as a person runs it, while the model streams slowly and a message
arrives mid-reply: each reply is printed whole under its label, never broken by the user's line."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import text_reply
from doors.control import send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_status
from tests.support.processes import REPO_ROOT, process_env
from tests.support.scripts import ScriptedModel, first_user_text
from worker import build_worker

# Numbered words: a piece out of place or a reply cut in two can never read as the whole.
FIRST = "".join(f"a{n} " for n in range(60)).strip()
SECOND = "".join(f"b{n} " for n in range(30)).strip()
LABEL = "assistant (streaming): "


class WatchProcess:
    """`python starter.py watch CID --follow`, its output collected line by line as it comes."""

    def __init__(self, settings: Settings, client: Client, conversation_id: str) -> None:
        env = process_env(settings, client.service_client.config.target_host)
        self.proc = subprocess.Popen(
            [sys.executable, "starter.py", "watch", conversation_id, "--follow"],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.text = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while piece := self.proc.stdout.read(1):
            self.text += piece

    def stop(self) -> str:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self._reader.join(timeout=10)
        return self.text


class Replies:
    """The first reply waits until `watch` follows (a busy machine can start it late), then both stream."""

    def __init__(self) -> None:
        self.watching = threading.Event()

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        last_user = [m for m in messages if m["role"] == "user"][-1]["content"]
        if last_user != first_user_text(messages):
            return text_reply(SECOND)
        assert self.watching.wait(timeout=90), "watch never printed the conversation"
        return text_reply(FIRST)


async def test_watch_prints_a_streamed_reply_whole_when_a_message_arrives_mid_reply(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    assert model.server is not None
    model.server.chunk_delay = 0.05  # a few seconds per reply
    replies = Replies()
    model.behaviour = replies
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "tell me a long story"))
        watch = WatchProcess(settings, client, cid)
        try:
            await eventually(lambda: _async("user: tell me a long story" in watch.text), timeout=90)
            replies.watching.set()
            await eventually(lambda: _async(LABEL in watch.text), timeout=60)
            await send_message(client, cid, "and then?")  # mid-reply
            await eventually(lambda: _async(f"{LABEL}{SECOND}\n" in watch.text or None), timeout=60)
            await wait_status(client, cid, "idle")
        finally:
            out = watch.stop()

    lines = out.splitlines()
    streamed = [line for line in lines if line.startswith("assistant (")]
    joined = "… (joined mid-reply) "
    first = streamed[0].removeprefix(LABEL).removeprefix(joined)
    assert FIRST.endswith(first) and len(streamed[0]) > len(LABEL), f"first reply broken: {out!r}"
    assert streamed[0] == f"{LABEL}{FIRST}" or streamed[0].startswith(LABEL + joined), out
    assert f"{LABEL}{SECOND}" in lines, f"second reply not whole: {out!r}"
    # The user's line comes after the first reply and before the second, never inside one.
    user = lines.index("user: and then?")
    assert lines.index(streamed[0]) < user < lines.index(f"{LABEL}{SECOND}"), out
    for line in lines:
        if line != streamed[0] and line != f"{LABEL}{SECOND}" and not line.startswith("assistant: "):
            assert not any(word in line.split() for word in ("a30", "b10")), f"reply text off its label: {out!r}"


async def _async(value: Any) -> Any:
    return value
