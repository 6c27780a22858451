"""The model's faults, injected while decided tools, model calls and streamed replies are in flight.

A model server that accepts and never answers, one that sends half a stream and then closes or
hangs, one that answers 429 with `retry-after` (tests/support/fault_models.py, in front of the
scripted demo model), and the network to the model cut or stalled and restored (a TcpProxy in
front of it). Each scenario runs `conversations` conversations on a worker of its own, in this
process, on the dev server `client` reaches, with the model client's timeout set through the
product's own setting (LLM_TIMEOUT_SECONDS).

Each conversation asks to run a command that appends its marker to a file (the tool's side effect,
counted). The request is approved around the fault, so the fault meets the model call that follows
a decided tool; a second message, sent while the fault lasts, asks for a second command, approved
as soon as it is asked. Measured: seconds from the fault's end until the first second command ran
(decisions flow again); lost (a decided command that never ran, an approval that vanished);
doubled (a command run twice, a request asked twice, a reply recorded twice or streamed twice with
no restart a reader can see); stuck (a conversation not idle with both results by the deadline).
What a user saw (the errors the worker logged, the waits between attempts, the restarts in the
stream) goes into a `ModelFaultSight` when one is passed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

from temporalio.client import Client

from demo_model.script import respond
from demo_model.server import ScriptedModelServer
from tests.faults.model_fault_drive import Fault, When, drive
from tests.faults.model_fault_sight import ModelFaultSight
from tests.faults.outcome import FaultOutcome
from tests.support.fault_models import FaultModelServer
from tests.support.tcp_proxy import TcpProxy
from workflows.activity_calls import LLM_RETRY

__all__ = [
    "ModelFaultSight",
    "run_model_half_stream",
    "run_model_network",
    "run_model_never_answers",
    "run_model_rate_limited",
    "run_model_refuses_every_attempt",
]


@asynccontextmanager
async def _fault_server() -> AsyncIterator[FaultModelServer]:
    """The scripted demo model behind a FaultModelServer (which reads each answer whole before it
    passes it on or breaks it off, so the demo model streams with no delay)."""
    upstream = ScriptedModelServer(respond).start()
    front = FaultModelServer(upstream.base_url).start()
    try:
        yield front
    finally:
        front.stop()
        upstream.stop()


async def run_model_never_answers(
    client: Client,
    workdir: Path,
    *,
    conversations: int,
    timeout_seconds: float = 1.0,
    fault_seconds: float = 1.5,
    database: str | Path | None = None,
    sight: ModelFaultSight | None = None,
) -> FaultOutcome:
    """For `fault_seconds` the model server takes every request and answers none of them."""
    async with _fault_server() as front:
        fault = Fault("model_never_answers", front.silent, front.restore, "before_reply", fault_seconds)
        return await drive(
            client, workdir, front.base_url, fault, conversations, timeout_seconds, database, sight, front
        )


async def run_model_half_stream(
    client: Client,
    workdir: Path,
    *,
    conversations: int,
    then: Literal["close", "hang"],
    when: When = "before_reply",
    timeout_seconds: float = 1.0,
    fault_seconds: float = 1.5,
    database: str | Path | None = None,
    sight: ModelFaultSight | None = None,
) -> FaultOutcome:
    """For `fault_seconds` every streamed reply stops halfway (a tool call in the middle of its
    arguments): the connection closes mid-body, or stays open and silent (the client's timeout
    ends it). `when="asking"` cuts the replies that propose the tool calls."""
    async with _fault_server() as front:
        fault = Fault(f"model_half_stream_{then}", lambda: front.half_stream(then), front.restore, when, fault_seconds)
        return await drive(
            client, workdir, front.base_url, fault, conversations, timeout_seconds, database, sight, front
        )


async def run_model_rate_limited(
    client: Client,
    workdir: Path,
    *,
    conversations: int,
    hints: tuple[dict[str, str], ...] = ({"retry-after": "2"}, {"retry-after": "9", "retry-after-ms": "1500"}),
    times: int = 1,
    timeout_seconds: float = 5.0,
    database: str | Path | None = None,
    sight: ModelFaultSight | None = None,
) -> FaultOutcome:
    """Each conversation's next `times` model calls (the one after its decided tool, and retries)
    are answered 429 with one of the hints' headers (conversations take them in turn); then the
    server answers again. The fault ends with the last refusal."""
    async with _fault_server() as front:
        fault = _refusals("model_rate_limited", front, hints, times, "before_reply")
        return await drive(
            client, workdir, front.base_url, fault, conversations, timeout_seconds, database, sight, front
        )


async def run_model_refuses_every_attempt(
    client: Client,
    workdir: Path,
    *,
    conversations: int,
    attempts: int = LLM_RETRY.maximum_attempts,
    database: str | Path | None = None,
    sight: ModelFaultSight | None = None,
) -> FaultOutcome:
    """A fault the service cannot ride out: every attempt of the model call that would propose the
    first command is refused (429, `retry-after-ms: 100`), until the retry policy gives up. The turn
    must fail with the server's reason and run nothing; the second message then goes on by itself."""
    async with _fault_server() as front:
        fault = _refusals("model_refuses_every_attempt", front, ({"retry-after-ms": "100"},), attempts, "asking")
        return await drive(
            client, workdir, front.base_url, fault, conversations, 5.0, database, sight, front, first_turn_fails=True
        )


def _refusals(name: str, front: FaultModelServer, hints: tuple[dict[str, str], ...], times: int, when: When) -> Fault:
    """429s that end by themselves when they run out: the fault's end is the last refusal."""

    def last_refusal() -> float | None:
        return max((seen.at for seen in front.seen if seen.handled == "rate_limited"), default=None)

    return Fault(name, lambda: front.rate_limit(hints, times), _ends_by_itself, when, 0.0, last_refusal)


def _ends_by_itself() -> None:
    """Nothing to end: a rate limit ends when its refusals run out."""


async def run_model_network(
    client: Client,
    workdir: Path,
    *,
    conversations: int,
    how: Literal["cut", "stall"],
    when: When,
    timeout_seconds: float = 1.0,
    fault_seconds: float = 1.5,
    chunk_delay: float = 0.03,
    database: str | Path | None = None,
    sight: ModelFaultSight | None = None,
) -> FaultOutcome:
    """The network to the scripted demo model cut (connections reset, new ones refused) or stalled
    (nothing forwarded) for `fault_seconds`, then restored; `when`: before the model call that
    follows a decided tool, or while its reply streams (`chunk_delay` between pieces)."""
    upstream = ScriptedModelServer(respond, chunk_delay=chunk_delay).start()
    proxy = TcpProxy(upstream.port).start()
    try:
        begin = proxy.cut if how == "cut" else proxy.stall
        fault = Fault(f"model_network_{how}_{when}", begin, proxy.restore, when, fault_seconds)
        url = f"http://127.0.0.1:{proxy.port}/v1"
        return await drive(client, workdir, url, fault, conversations, timeout_seconds, database, sight, None)
    finally:
        proxy.stop()
        upstream.stop()
