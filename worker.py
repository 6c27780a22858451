"""The worker: runs ConversationWorkflow, ApprovalRequestWorkflow and every activity (model, tools, projection).

It polls two task queues: the deployment's shared one (workflows, the model, the tool catalog, the
projection) and its host's own one, where the tools of the conversations pinned to this host run,
on this host's workspace (see activities/hosts.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import traceback
from collections.abc import Coroutine
from dataclasses import replace
from datetime import timedelta
from typing import Any, NoReturn

from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.worker import Replayer, Worker

from activities.approved_effects import ApprovedEffectActivities
from activities.host_handoff import hand_over
from activities.host_presence import keep_noting
from activities.hosts import HostActivities
from activities.judge import JudgeActivities
from activities.ledger import Ledger
from activities.llm import LlmActivities
from activities.mcp_elicitation import ElicitationDesk
from activities.notify import NotifyActivities
from activities.process_watch import watch_children_by_pidfd
from activities.projection import ProjectionActivities
from activities.push_book import StoredPushBook
from activities.request_results import approval_request_result
from activities.sandbox import describe as describe_sandbox
from activities.service_rules import ServiceRulesActivity
from activities.tool_sources import ToolSources
from activities.tools import ToolActivities
from activities.workspace_saves import WorkspaceSaves
from activities.workspaces import SHARED_DIR, adopt_shared_files
from config.build_id import project_build_id
from config.process_exit import leave
from config.settings import Settings
from config.telemetry import setup_tracing
from config.workflow_sandbox import WORKFLOW_RUNNER
from core.wire_model import build_deferred_models
from doors.policy_reload import watch_policy_file
from maintenance.failure_watch import FailureWatch
from maintenance.stranded_tools import watch_stranded
from payload_store.connection import connect
from storage.store import ProjectionStore
from workflows.approval_request import ApprovalRequestWorkflow
from workflows.conversation import ConversationWorkflow
from workflows.nexus_handler import ApprovalsNexusHandler

# Every workflow type this service runs (the replay tests replay histories of each).
WORKFLOWS = [ConversationWorkflow, ApprovalRequestWorkflow]


def replayer(data_converter: DataConverter) -> Replayer:
    """A replayer of this service's workflows in the sandbox its workers run them in. A replay
    checks what the code decides, not how fast: `debug_mode` lifts the SDK's 2-second deadlock
    timer, which one replay on two loaded cores missed in a garbage-collection pause."""
    return Replayer(
        workflows=WORKFLOWS, workflow_runner=WORKFLOW_RUNNER, data_converter=data_converter, debug_mode=True
    )


# Whatever imports the workflows runs or replays them: their wire types are built here, not in an activation.
build_deferred_models()


class HostWorker:
    """The shared-queue worker and the host-queue worker, started and stopped together; on the way
    out it stops the MCP servers it started and closes its databases and its model client."""

    def __init__(
        self,
        shared: Worker,
        host: Worker,
        tools: ToolActivities,
        projection: ProjectionStore,
        closers: list[Any],
        settings: Settings,
        saves: WorkspaceSaves | None = None,
    ) -> None:
        self.shared, self.host, self.tools, self.projection = shared, host, tools, projection
        self.settings, self.saves = settings, saves
        self._closers = closers
        self._handing_over = False

    async def __aenter__(self) -> HostWorker:
        await self.shared.__aenter__()
        await self.host.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            # Both stop taking tasks at once; running tools get WORKER_STOP_GRACE_SECONDS to finish.
            await asyncio.gather(self.host.__aexit__(*exc), self.shared.__aexit__(*exc))
            if self._handing_over:
                settings = self.settings
                await hand_over(
                    self.shared.client,
                    self.projection,
                    settings.host_name,
                    settings.host_queue,
                    self.saves,
                    settings.workspace_dir,
                )
        finally:
            await self.tools.sources.close()
            for closer in self._closers:
                await closer.close()

    async def run(self, beside: Coroutine[Any, Any, None] | None = None, stop: asyncio.Event | None = None) -> None:
        """Until cancelled (Ctrl-C) or `stop` is set (SIGTERM: then the conversations pinned to this
        host are handed over, activities/host_handoff.py); `beside` runs as long as the workers
        do, and stops before their databases close."""
        async with self:
            settings = self.settings
            noting = keep_noting(self.projection, settings.host_name, settings.host_queue)
            tasks = [asyncio.create_task(job) for job in (beside, noting) if job is not None]
            try:
                await (stop or asyncio.Event()).wait()
                logging.info(
                    "stopping: no new tasks; running tools have %g s to finish, then this host's"
                    " conversations are handed over",
                    settings.worker_stop_grace_seconds,
                )
                self._handing_over = True
            finally:
                for task in tasks:
                    task.cancel()


def build_worker(client: Client, settings: Settings | None = None, **worker_options: Any) -> HostWorker:
    """A worker for settings.task_queue and settings.host_queue; tests pass their own settings and options."""
    settings = settings or Settings()
    settings.workspace_dir.mkdir(parents=True, exist_ok=True)
    # The host's name, read once: WORKER_HOST, or the id kept in the workspace (config/host_identity.py).
    settings = replace(settings, worker_host=settings.host_name)
    moved = adopt_shared_files(settings.workspace_dir)
    if moved:
        logging.info("moved %d entries of the shared workspace into %s: %s", len(moved), SHARED_DIR, ", ".join(moved))
    projection = ProjectionStore(settings.approvals_db, delta_retention_seconds=settings.stream_delta_retention)
    ledger = Ledger(settings.ledger_db)
    # Streamed text goes through this process's own projection store, beside the workflow's writes.
    llm = LlmActivities(
        settings.openai_base_url,
        settings.openai_api_key,
        settings.llm_model,
        settings.llm_timeout_seconds,
        max_tokens=settings.llm_max_tokens,
        stream=settings.llm_stream,
        deltas=projection,
    )
    sandbox = settings.sandbox_policy()
    saves = WorkspaceSaves.from_settings(settings)
    # MCP servers' questions (elicitation) go to the inbox through this read model.
    sources = ToolSources(settings.load_tools(), settings.workspace_dir, sandbox, ElicitationDesk(projection))
    tools = ToolActivities(
        settings.workspace_dir,
        ledger,
        projection,
        sources,
        sandbox,
        settings.host_queue,
        settings.max_read_bytes(),
        settings.undo_retention,
        saves,
        settings.supplied_secret_key(),
    )
    hosts = HostActivities(settings.host_queue, projection)
    notify = NotifyActivities(
        settings.load_notify(),
        settings.link_base,
        ledger,
        people=projection,
        link_key=settings.decision_link_key,
        push=StoredPushBook(projection, settings.push_keys),
    )
    writes = ProjectionActivities(projection)
    projection.on_resolved(notify.message_decided)  # a decided request's Slack messages say so
    runners: list[Any] = [
        tools.execute_tool,
        tools.run_python_tool,
        tools.call_mcp_tool,
        tools.preview_effect,
        tools.prepare_undo,
    ]
    # A waiting conversation needs no cache entry: a small cache keeps memory flat, and a
    # conversation is rebuilt by replay when its decision arrives (see bench/results.md).
    worker_options.setdefault("max_cached_workflows", settings.workflow_cache_size)
    grace = timedelta(seconds=settings.worker_stop_grace_seconds)
    worker_options.setdefault("graceful_shutdown_timeout", grace)
    worker_options.setdefault("build_id", project_build_id())  # Temporal's own default costs 0.2 CPU-s
    shared = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=WORKFLOWS,
        workflow_runner=WORKFLOW_RUNNER,
        activities=[
            llm.call_llm,
            tools.list_tools,
            hosts.pick_tool_host,
            hosts.check_host,
            JudgeActivities(projection, settings.load_prescreen).judge_call,
            # Conversations started before tools were pinned to a host still run them here.
            *runners,
            writes.project_conversation,
            writes.project_approval_requested,
            writes.project_approval_resolved,
            writes.project_compaction,
            writes.project_approval_changed,
            notify.notify_approval,
            ServiceRulesActivity(settings, projection).service_rules,
            *_caller_activities(ApprovedEffectActivities(ledger, projection)),
        ],
        nexus_service_handlers=[ApprovalsNexusHandler()],  # the `approvals` service (docs/nexus.md)
        **worker_options,
    )
    host = Worker(
        client,
        task_queue=settings.host_queue,
        activities=runners,
        graceful_shutdown_timeout=worker_options["graceful_shutdown_timeout"],
        build_id=worker_options["build_id"],
    )
    return HostWorker(shared, host, tools, projection, [projection, ledger, llm.endpoint], settings, saves)


def _caller_activities(effects: ApprovedEffectActivities) -> list[Any]:
    """What the caller's helpers (durable_approvals) ask of the service, on the shared queue."""
    return [effects.approved_effect_begin, effects.approved_effect_finish, approval_request_result]


def metrics_options(settings: Settings) -> dict[str, Any]:
    """With WORKER_METRICS_PORT set: this process's /metrics there, the Temporal SDK's runtime
    metrics included (a runtime of our own exports them on a loopback port that /metrics reads)."""
    if settings.worker_metrics_port is None:
        return {}
    from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

    from activities import worker_metrics

    sdk_address = worker_metrics.loopback_address()
    runtime = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=sdk_address)))
    worker_metrics.serve(settings.worker_metrics_port, sdk_address)
    logging.info("worker metrics on :%d/metrics", settings.worker_metrics_port)
    return {"runtime": runtime}


async def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    watch_children_by_pidfd()  # every tool's process: no thread of its own to wait for it
    setup_tracing("approvals-worker")  # OTEL_* set: traces over OTLP (config/telemetry.py)
    client = await connect(settings, **metrics_options(settings))
    worker = build_worker(client, settings)
    logging.info("tool sandbox: %s", describe_sandbox(settings.sandbox_policy()))
    settings = worker.settings
    logging.info(
        "worker ready: host %s, shared queue %s and host queue %s on %s",
        settings.host_name,
        settings.task_queue,
        settings.host_queue,
        settings.temporal_address,
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    # Beside the worker, through its own store (one writer per process): shows a conversation whose
    # workflow task keeps failing as failed, with why.
    failures = FailureWatch(client, worker.projection, settings.failure_watch_interval).run()
    # And tools an earlier release left on the host queue of a host that is gone (maintenance/stranded_tools.py).
    stranded = watch_stranded(client, settings.host_gone_seconds)
    # And POLICY_FILE: a change of the rules reaches every open conversation (doors/policy_reload.py).
    rules = watch_policy_file(client, settings, worker.projection)
    await worker.run(beside=_together(failures, stranded, rules), stop=stop)


async def _together(*jobs: Coroutine[Any, Any, None]) -> None:
    await asyncio.gather(*jobs)


def run() -> NoReturn:
    """The process entry point: 0 once stopped (SIGTERM, Ctrl-C), 1 with the traceback if the worker
    failed; it leaves through `leave` (config/process_exit.py), not the interpreter's finalisation."""
    code = 0
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main())
    except Exception:
        traceback.print_exc()
        code = 1
    leave(code)


if __name__ == "__main__":
    run()
