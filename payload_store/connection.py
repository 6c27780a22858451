"""One way to reach Temporal for the worker, the CLI and the UI: with the one data converter (the payload store)."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client
from temporalio.envconfig import ClientConfig

from config.settings import Settings
from config.telemetry import temporal_interceptors
from payload_store import data_converter


async def connect(settings: Settings | None = None, **options_of_ours: Any) -> Client:
    """Temporal's env config and profiles apply first; TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE win.
    options_of_ours: more of Client.connect's (a runtime with metrics, interceptors)."""
    settings = settings or Settings()
    options: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    options["target_host"] = settings.temporal_address
    options["namespace"] = settings.namespace
    options.update(options_of_ours)
    options.setdefault("interceptors", temporal_interceptors())  # tracing, when OTEL_* configure it
    return await Client.connect(**options, data_converter=data_converter(settings))
