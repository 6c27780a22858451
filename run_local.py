"""`make run`: the whole system on this machine, ready for a newcomer within a minute.

Starts the Temporal dev server (history in data/temporal.db, so a second run finds everything)
with the `approvals` Nexus endpoint pointing at the worker's task queue,
the scripted demo model unless a real model is configured, the worker and the approvals UI;
shows when each is ready, prints where to look, and stops every process it started on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import urllib.parse

import httpx
from temporalio.client import Client

from cli.readiness import http_ok, port_open, wait_until, worker_polls
from cli.run_plan import (
    REPO_ROOT,
    LocalOptions,
    busy_ports,
    child_env,
    cli_hint,
    parse_options,
    services,
    temporal_binary,
)
from cli.supervisor import Child, Supervisor, say
from config.process_exit import leave
from config.settings import Settings
from doors.control import start_conversation
from doors.nexus_endpoint import DEFAULT_ENDPOINT, endpoint_command, ensure_endpoint
from payload_store.connection import connect
from storage.store import ProjectionStore

DEMO_MESSAGE = "write hello to notes.txt"
MAX_REPLACEMENTS = 5  # a worker that keeps dying is a bug to read about, not to hide


class LocalRun:
    def __init__(self, options: LocalOptions, environ: dict[str, str]) -> None:
        self.options = options
        self.environ = environ
        self.env = child_env(options, environ)
        self.supervisor = Supervisor(REPO_ROOT)
        self.stop = asyncio.Event()
        self.failed: str | None = None
        self.started = time.monotonic()

    def ready(self, name: str, detail: str) -> None:
        say(f"✓ {name} ready after {time.monotonic() - self.started:.1f}s: {detail}")

    async def watch_exits(self) -> None:
        """An essential child that ends stops everything, a worker is replaced, the UI may end alone."""
        replaced = 0
        while True:
            child = await self.supervisor.exits.get()
            code = child.proc.returncode
            if child.stopping or self.stop.is_set():
                continue
            if child.service.restarts and replaced < MAX_REPLACEMENTS:
                replaced += 1
                say(f"! {child.name} exited with status {code}; starting a new one (what it waited for resumes)")
                await self.supervisor.start(child.service)
            elif child.service.essential:
                self.failed = f"{child.name} exited with status {code}; stopping everything"
                say(f"✗ {self.failed}")
                self.stop.set()
            else:
                say(f"! {child.name} exited with status {code} (see its lines above); the rest runs on")

    async def bring_up(self) -> bool:
        plan = {service.name: service for service in services(self.options, self.environ, temporal_binary())}
        opts, stop = self.options, self.stop
        await self.supervisor.start(plan["temporal"])
        settings = Settings()
        clients: list[Client] = []

        async def temporal_answers() -> bool:
            client = await asyncio.wait_for(connect(settings), 10)
            await client.count_workflows()
            clients.append(client)
            return True

        if not await wait_until(temporal_answers, 90, stop):
            return self._fail("Temporal did not start")
        await wait_until(lambda: port_open("localhost", opts.temporal_ui_port), 30, stop)
        self.ready("temporal", f"{opts.temporal_address}, Web UI {opts.temporal_ui_url}")
        client = clients[-1]
        # Workflows of other namespaces ask through this endpoint (docs/nexus.md).
        done = await ensure_endpoint(client, settings.namespace, settings.task_queue)
        target = f"namespace {settings.namespace}, task queue {settings.task_queue}"
        self.ready("nexus endpoint", f"{DEFAULT_ENDPOINT} -> {target} ({done})")

        children: dict[str, Child] = {}
        for name in ("model", "worker", "ui"):
            if stop.is_set():  # Ctrl-C while starting: start nothing more
                return False
            if name in plan:
                children[name] = await self.supervisor.start(plan[name])
        checks = [self._await_worker(children["worker"], client, settings)]
        if "model" in children:
            checks.append(self._await_http("model", f"{opts.model_url}/models", "scripted demo model"))
        checks.append(self._await_http("ui", opts.ui_url, f"approvals UI {opts.ui_url}", essential=False))
        if not all(await asyncio.gather(*checks)):
            return False
        if opts.demo_conversation:
            await self._start_demo_conversation(client, settings)
        return True

    async def _await_http(self, name: str, url: str, detail: str, essential: bool = True) -> bool:
        async with httpx.AsyncClient(timeout=2.0) as http:
            answered = await wait_until(lambda: http_ok(http, url), 60, self.stop)
        if answered:
            self.ready(name, detail)
            return True
        if essential:
            return self._fail(f"{name} did not answer at {url}")
        if not self.stop.is_set():
            say(f"! {name} is not answering at {url}")
        return True

    async def _await_worker(self, worker: Child, client: Client, settings: Settings) -> bool:
        async def polls() -> bool:
            return await worker_polls(client, settings.namespace, settings.task_queue, worker.proc.pid)

        if await wait_until(polls, 90, self.stop):
            self.ready("worker", f"polling task queue {settings.task_queue}")
            return True
        return self._fail("the worker did not start polling")

    async def _start_demo_conversation(self, client: Client, settings: Settings) -> None:
        """A first conversation that waits for approval, so a newcomer sees something pending."""
        store = ProjectionStore(settings.approvals_db)
        try:
            if (await store.conversations(limit=1)).items:
                return
        finally:
            await store.close()
        conversation_id = await start_conversation(client, settings, DEMO_MESSAGE)
        say(f"✓ started a first conversation, {conversation_id}: {DEMO_MESSAGE!r} (it will wait for your approval)")

    def _fail(self, why: str) -> bool:
        if self.failed is None and not self.stop.is_set():
            self.failed = why
            say(f"✗ {why}; stopping everything")
        self.stop.set()
        return False

    def banner(self) -> None:
        opts, cli = self.options, cli_hint(self.options, self.environ)
        settings = Settings()  # this process reads the children's variables (see run())
        nexus = endpoint_command(settings.namespace, settings.task_queue)
        query = urllib.parse.quote('TurnStatus="awaiting_approval"')
        model = (
            f"scripted demo model at {opts.model_url} (set OPENAI_API_KEY or OPENAI_BASE_URL for a real one)"
            if "model" in {c.name for c in self.supervisor.children}
            else f"{self.env['OPENAI_BASE_URL']} ({self.env.get('LLM_MODEL', 'default model')})"
        )
        say("")
        say("Everything is up.")
        say(f"  Approvals UI     {opts.ui_url}")
        say(f"  Temporal Web UI  {opts.temporal_ui_url}/namespaces/default/workflows?query={query}")
        say(f"  Model            {model}")
        say(f"  Nexus endpoint   {DEFAULT_ENDPOINT}; on a real cluster: {nexus}")
        say("  In another terminal, try:")
        say(f"    {cli} pending")
        say(f"    {cli} approve REQUEST_ID")
        say(f"    {cli} start 'list the files and read notes.txt'")
        say(f"History is kept in {opts.data_dir / 'temporal.db'}. Press Ctrl-C to stop everything.")
        say("")

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        # SIGHUP too: a terminal closed while things start or stop must not orphan the children.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop.set)
        self.options.data_dir.mkdir(parents=True, exist_ok=True)
        os.environ.update(self.env)  # Settings() in this process reads the same variables as the children
        watcher = asyncio.create_task(self.watch_exits())
        try:
            if await self.bring_up():
                self.banner()
                await self.stop.wait()
        finally:
            say("Stopping...")
            await self.supervisor.stop_all()
            watcher.cancel()
        say("Stopped." if self.failed is None else f"Stopped: {self.failed}.")
        return 0 if self.failed is None else 1


def main(argv: list[str] | None = None) -> None:
    options = parse_options(argv)
    busy = busy_ports(options, dict(os.environ))
    if busy:
        held = ", ".join(f"{port} ({flag})" for flag, port in busy)
        print(f"run_local.py: port(s) already in use: {held}; stop what holds them or move with the flag named")
        sys.exit(1)
    leave(asyncio.run(LocalRun(options, dict(os.environ)).run()))


if __name__ == "__main__":
    main()
