"""OpenTelemetry traces, configured by the standard OTEL_* variables and off when none is set.

With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, each process (worker,
UI, CLI) exports its spans over OTLP (HTTP/protobuf, or gRPC when OTEL_EXPORTER_OTLP_PROTOCOL=grpc
and its exporter is installed); OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.
Temporal's TracingInterceptor joins every client and worker, so a conversation's workflow, its
model calls, projection writes and tool runs are one trace, across worker restarts (the context
travels in Temporal's headers). The doors add a span of their own for each decision, parented to
the trace of the request decided (kept in the read model as a W3C traceparent), with who decided
and through which door as attributes: never argument values, reasons or tokens.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

log = logging.getLogger(__name__)
TRACER_NAME = "durable_approvals"
_state: dict[str, Any] = {}


def tracing_configured(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def setup_tracing(service_name: str) -> bool:
    """Install this process's tracer provider once (OTEL_SERVICE_NAME wins over service_name);
    False when tracing is not configured."""
    if "provider" in _state:
        return True
    if not tracing_configured():
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(_exporter()))
    trace.set_tracer_provider(provider)
    _state["provider"] = provider
    return True


def _exporter() -> Any:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
        except ImportError:
            log.warning("OTLP over gRPC needs opentelemetry-exporter-otlp-proto-grpc; exporting over HTTP instead")
        else:
            return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def tracing_active() -> bool:
    """Whether this process exports spans (setup_tracing installed a provider)."""
    return "provider" in _state


def shutdown_tracing() -> None:
    """Send what is buffered and stop (a CLI command that ends, a worker that stops)."""
    provider = _state.pop("provider", None)
    if provider is not None:
        provider.shutdown()


def temporal_interceptors() -> list[Any]:
    """Temporal's tracing interceptor for a client (its workers inherit it), when tracing is on."""
    if "provider" not in _state:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor()]


def _otel_loaded() -> bool:
    """Whether this process may hold a span: ours are on, or something in it loaded OpenTelemetry
    (and may have set its own provider). A CLI run with tracing off never imports it (a tenth of
    its start)."""
    return tracing_active() or "opentelemetry.trace" in sys.modules


@functools.cache
def _propagator() -> TraceContextTextMapPropagator:
    """The W3C trace-context propagator, made once, on the first span that needs it."""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator()


def current_traceparent() -> str | None:
    """The W3C traceparent of the span running now, if it is recorded."""
    if not _otel_loaded():
        return None
    from opentelemetry import trace

    if not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _propagator().inject(carrier)
    return carrier.get("traceparent")


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id (32 hex digits) a traceparent names."""
    parts = (traceparent or "").split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else None


@contextmanager
def span(
    name: str, attributes: Mapping[str, str | int | None], traceparent: str | None = None
) -> Iterator[Span | None]:
    """One span of ours, a child of `traceparent` when given (the request's trace), else of the
    current span. Attributes are the caller's choice of safe values; None ones are left out.
    None, and nothing recorded, where no span can be (see `_otel_loaded`)."""
    if not _otel_loaded():
        yield None
        return
    from opentelemetry import context, trace

    parent = _propagator().extract({"traceparent": traceparent}) if traceparent else None
    token = context.attach(parent) if parent is not None else None
    try:
        tracer = trace.get_tracer(TRACER_NAME)
        safe = {key: value for key, value in attributes.items() if value is not None}
        with tracer.start_as_current_span(name, attributes=safe) as current:
            yield current
    finally:
        if token is not None:
            context.detach(token)
