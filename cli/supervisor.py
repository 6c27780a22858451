"""Child processes for `make run`: start them, prefix their output, stop every one cleanly.

Each child gets a session of its own, so Ctrl-C in the terminal reaches this supervisor only and
it can stop the children in order (the worker before the server it talks to), each with SIGINT
first, as a person pressing Ctrl-C would, then SIGTERM, then SIGKILL if it will not go.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cli.run_plan import Service

OUTPUT_LINE_LIMIT = 1 << 20
STOP_STEPS: tuple[tuple[signal.Signals, float], ...] = (
    (signal.SIGINT, 15.0),
    (signal.SIGTERM, 5.0),
    (signal.SIGKILL, 5.0),
)


def say(text: str) -> None:
    print(text, flush=True)


@dataclass
class Child:
    service: Service
    proc: asyncio.subprocess.Process
    pump: asyncio.Task[None] | None = None
    stopping: bool = False

    @property
    def name(self) -> str:
        return self.service.name

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    def signal_group(self, sig: signal.Signals) -> None:
        """The whole process group: a child's own children go with it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


@dataclass
class Supervisor:
    cwd: Path
    children: list[Child] = field(default_factory=list)
    exits: asyncio.Queue[Child] = field(default_factory=asyncio.Queue)
    stopping: bool = False

    async def start(self, service: Service) -> Child:
        proc = await asyncio.create_subprocess_exec(
            *service.command,
            cwd=self.cwd,
            env=service.env,  # only what this child needs (cli.run_plan.CHILD_ENV)
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            limit=OUTPUT_LINE_LIMIT,
        )
        child = Child(service, proc)
        # Registered before anything else can run: a stop that begins now still finds this child.
        self.children.append(child)
        child.pump = asyncio.create_task(self._pump(child))
        say(f"- {service.name} started (pid {proc.pid})")
        if self.stopping:  # started while everything stops (Ctrl-C during start-up): stop it too
            await self._stop(child)
        return child

    async def _pump(self, child: Child) -> None:
        """Copy the child's output, each line prefixed with its name; report when it ends."""
        assert child.proc.stdout is not None
        width = max(len(c.name) for c in self.children) if self.children else len(child.name)
        try:
            async for raw in child.proc.stdout:
                line = raw.decode(errors="replace").rstrip()
                sys.stdout.write(f"{child.name:>{max(width, 6)}} | {line}\n")
                sys.stdout.flush()
        except ValueError:  # a line over the limit: stop copying, never stop supervising
            say(f"! {child.name} wrote a line too long to show; its further output is dropped")
        await child.proc.wait()
        await self.exits.put(child)

    async def stop_all(self) -> None:
        """Everything but Temporal together, then Temporal, so nothing loses its server mid-shutdown.
        A child that fails to stop cleanly never keeps the others (Temporal above all) running."""
        self.stopping = True
        first = [c for c in self.children if c.name != "temporal"]
        last = [c for c in self.children if c.name == "temporal"]
        for group in (first, last):
            for outcome in await asyncio.gather(*(self._stop(c) for c in group), return_exceptions=True):
                if isinstance(outcome, BaseException):
                    say(f"! stopping a child failed: {outcome!r}")
        for child in self.children:  # the last word: nothing this supervisor started outlives it
            child.signal_group(signal.SIGKILL)

    async def _stop(self, child: Child) -> None:
        if not child.running and not child.stopping:  # it ended earlier and was reported then
            child.signal_group(signal.SIGKILL)
            return
        child.stopping = True
        for sig, wait_seconds in STOP_STEPS:
            if not child.running:
                break
            child.signal_group(sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.proc.wait(), wait_seconds)
        child.signal_group(signal.SIGKILL)  # anything the child left behind in its group
        if child.pump is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.pump, 5.0)
        say(f"- {child.name} stopped (exit {child.proc.returncode})")
