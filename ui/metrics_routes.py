"""`GET /metrics`: the approvals' figures in Prometheus' text format, counted at scrape time.

Every figure comes from the read model (and the ledger's delivered notifications), not from this
process's memory, so decisions made through any door, and on any host, count on every UI's
endpoint, and a restarted UI loses nothing. Guarded like the API (`Authorization: Bearer`).
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from core.contract import ERROR_STALE_APPROVAL
from storage.figures import Figures, NotificationFigures, ledger_figures
from ui.route_support import ledger_of, store_of
from ui.security import require_token

# Seconds: a glance, a read, a coffee, a meeting, a day, the default seven-day timeout.
DECISION_BUCKETS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0, 604800.0)

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_token)])


def histogram_buckets(values: list[float], bounds: tuple[float, ...] = DECISION_BUCKETS) -> list[tuple[str, float]]:
    """Cumulative (upper bound, count) pairs ending with +Inf, as Prometheus histograms count."""
    buckets = [(str(bound), float(sum(1 for value in values if value <= bound))) for bound in bounds]
    return [*buckets, ("+Inf", float(len(values)))]


class ApprovalsCollector(Collector):
    """The families of one scrape, from figures read just before."""

    def __init__(
        self, figures: Figures, notifications: NotificationFigures, waiting_for_host: dict[str, int] | None = None
    ) -> None:
        self._figures, self._notifications = figures, notifications
        self._waiting_for_host = waiting_for_host or {}

    def collect(self) -> Iterator[Metric]:
        figures = self._figures
        waiting = GaugeMetricFamily("approvals_waiting", "Approval requests waiting for a decision", labels=["tool"])
        for tool, count in sorted(figures.waiting.items()):
            waiting.add_metric([tool], count)
        yield waiting
        decisions = CounterMetricFamily(
            "approvals_decisions", "Resolved approval requests", labels=["outcome", "door", "tool"]
        )
        expired = CounterMetricFamily("approvals_expired", "Requests nobody decided in time", labels=["tool"])
        expiries: dict[str, int] = {}
        for (outcome, door, tool), count in sorted(figures.decisions.items()):
            decisions.add_metric([outcome, door, tool], count)
            if outcome == "expired":
                expiries[tool] = expiries.get(tool, 0) + count
        for tool, count in sorted(expiries.items()):
            expired.add_metric([tool], count)
        yield decisions
        yield expired
        took = HistogramMetricFamily(
            "approvals_time_to_decision_seconds",
            "Seconds from the request to a person's decision",
            labels=["tool", "door"],
        )
        for (tool, door), values in sorted(figures.decision_seconds.items()):
            took.add_metric([tool, door], histogram_buckets(values), sum(values))
        yield took
        yield from self._refusals()
        yield from self._deliveries()
        yield self._hosts()

    def _hosts(self) -> Metric:
        """Tools waiting for a host no worker polls: a host that left and whose tools have not moved yet."""
        waiting = GaugeMetricFamily(
            "approvals_tools_waiting_for_host",
            "Conversations whose tool waits for a host no worker polls",
            labels=["host"],
        )
        for host, count in sorted(self._waiting_for_host.items()):
            waiting.add_metric([host], count)
        return waiting

    def _refusals(self) -> Iterator[Metric]:
        refused = CounterMetricFamily(
            "approvals_decisions_refused", "Decisions a door refused, by why", labels=["reason", "door"]
        )
        stale = CounterMetricFamily(
            "approvals_decisions_stale", "Decisions made on arguments that had changed", labels=["door"]
        )
        for (reason, door), count in sorted(self._figures.refusals.items()):
            refused.add_metric([reason, door], count)
            if reason == ERROR_STALE_APPROVAL:
                stale.add_metric([door], count)
        yield refused
        yield stale
        notices = CounterMetricFamily(
            "approvals_rapid_approval_notices", "Runs of approvals made faster than they could be read"
        )
        notices.add_metric([], self._figures.notices)
        yield notices

    def _deliveries(self) -> Iterator[Metric]:
        delivered = CounterMetricFamily(
            "approvals_notifications_delivered", "Notifications delivered", labels=["channel"]
        )
        escalations = CounterMetricFamily(
            "approvals_escalations", "Escalations delivered to a channel", labels=["channel"]
        )
        for channel, count in sorted(self._notifications.delivered.items()):
            delivered.add_metric([channel], count)
        for channel, count in sorted(self._notifications.escalations.items()):
            escalations.add_metric([channel], count)
        yield delivered
        yield escalations


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    store = store_of(request)
    figures = await store.approval_figures()
    notifications = await ledger_of(request).run(ledger_figures, write=False)
    waiting_for_host = await store.tools_waiting_by_host()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ApprovalsCollector(figures, notifications, waiting_for_host))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
