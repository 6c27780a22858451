"""What one worker process did, for its own `/metrics` (WORKER_METRICS_PORT): sandboxes started
and refused, tool runs, calls whose outcome is unknown, notifications sent and failed; beside
them, the Temporal SDK's runtime metrics (its own Prometheus endpoint on a loopback port, read and
served again here, so one scrape gets both).

These counters are process-local by nature (a restart starts them at zero, as Prometheus
expects of counters); the approvals' figures themselves come from the read model, on the UI.
Labels are tool names, channels, launchers and results: never arguments.
"""

from __future__ import annotations

import logging
import socket
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from activities.sandbox import Launch, SandboxPolicy, SandboxUnavailable, sandboxed_launch

log = logging.getLogger(__name__)
REGISTRY = CollectorRegistry()

SANDBOX_STARTS = Counter(
    "approvals_sandbox_starts", "Processes started in the tool sandbox", ["launcher"], registry=REGISTRY
)
SANDBOX_FAILURES = Counter(
    "approvals_sandbox_failures", "Tool processes not run because no sandbox could start", registry=REGISTRY
)
TOOL_RUNS = Counter("approvals_tool_runs", "Tool calls run, by result", ["tool", "result"], registry=REGISTRY)
OUTCOME_UNKNOWN = Counter(
    "approvals_tool_outcome_unknown",
    "Calls not run again because an earlier attempt had started them",
    ["tool"],
    registry=REGISTRY,
)
NOTIFICATIONS_SENT = Counter(
    "approvals_notifications_sent", "Notifications this worker delivered", ["channel"], registry=REGISTRY
)
NOTIFICATION_FAILURES = Counter(
    "approvals_notification_failures", "Notification attempts that failed", ["channel"], registry=REGISTRY
)


def counted_launch(
    argv: Sequence[str], workspace: Path, policy: SandboxPolicy, environ: Mapping[str, str] | None = None
) -> Launch:
    """sandboxed_launch, counted: a start by its launcher, or a failure (SandboxUnavailable)."""
    try:
        launch = sandboxed_launch(argv, workspace, policy, environ)
    except SandboxUnavailable:
        SANDBOX_FAILURES.inc()
        raise
    SANDBOX_STARTS.labels(launch.launcher or "none").inc()
    return launch


class TemporalRuntimeMetrics(Collector):
    """The SDK core's own endpoint (PrometheusConfig), read at each scrape and passed through."""

    def __init__(self, url: str) -> None:
        self._url = url

    def collect(self) -> Iterator[Metric]:
        try:
            with urllib.request.urlopen(self._url, timeout=5) as response:
                text = response.read().decode()
        except OSError as err:
            log.warning("the Temporal runtime's metrics are not readable: %s", err)
            return
        yield from text_string_to_metric_families(text)


def loopback_address() -> str:
    """A free loopback address for the SDK's own endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def serve(port: int, temporal_address: str | None = None, host: str = "0.0.0.0") -> WSGIServer:
    """Serve /metrics on the port from a thread of this process, with the SDK's endpoint's metrics
    when its address is given; returns the server (`shutdown()` stops it)."""
    registry = REGISTRY
    if temporal_address is not None:
        registry = CollectorRegistry()
        registry.register(_Both(TemporalRuntimeMetrics(f"http://{temporal_address}/metrics")))
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server


class _Both(Collector):
    """This process's counters and the SDK's, in one registry of their own for one server."""

    def __init__(self, runtime: TemporalRuntimeMetrics) -> None:
        self._runtime = runtime

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()
        yield from self._runtime.collect()
