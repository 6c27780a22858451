"""The approvals UI: a FastAPI app over the projection and Temporal, and the way to serve it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import import_module
from typing import Any

import uvicorn
from fastapi import APIRouter, FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.middleware.trustedhost import TrustedHostMiddleware

from channels import deciding_kinds
from config.settings import Settings
from storage.backend import StoreFull, StoreUnavailable
from storage.store import ProjectionStore
from ui import (
    agui_routes,
    analytics_routes,
    approval_routes,
    conversation_routes,
    elicitation_routes,
    events,
    grant_routes,
    link_routes,
    metrics_routes,
    pages,
    push_routes,
    request_routes,
    team_routes,
    undo_routes,
)
from ui.asker_gate import AskerGate
from ui.errors import HttpError, render_http_error, render_store_full, render_store_unavailable, render_validation_error
from ui.limits import BodyLimit
from ui.open_streams import OpenStreams
from ui.proxy_identity import ProxyPeerGate
from ui.security import SecurityHeaders, allowed_hosts
from ui.temporal import ClientProvider, LazyClient

log = logging.getLogger(__name__)

# Each feature's routes live in one module; this is the one place they are mounted (beside the
# routes of the channels that are doors, which their registry names: door_routers()).
FEATURE_ROUTERS: tuple[APIRouter, ...] = (
    conversation_routes.router,
    approval_routes.router,
    grant_routes.router,
    elicitation_routes.router,
    undo_routes.router,
    request_routes.router,
    team_routes.router,
    events.router,
    pages.router,
    link_routes.router,
    agui_routes.router,
    metrics_routes.router,
    analytics_routes.router,
    analytics_routes.page_router,
    push_routes.router,
    push_routes.page_router,
)


def create_app(settings: Settings, client_provider: ClientProvider | None = None) -> FastAPI:
    """client_provider returns the Temporal client to use; tests pass their own, serve() connects lazily."""
    store = ProjectionStore(settings.approvals_db)

    @asynccontextmanager
    async def lifespan(running: FastAPI) -> AsyncIterator[None]:
        yield
        await close_stores(running)

    # The OpenAPI schema (no docs pages: they would need inline script) describes the API for clients and fuzzers.
    app = FastAPI(
        title="Approvals inbox", docs_url=None, redoc_url=None, openapi_url="/api/openapi.json", lifespan=lifespan
    )
    app.state.settings = settings
    # One store per app: a pool of connections (PostgreSQL) or a thread per query (SQLite).
    app.state.store = store
    app.state.client_provider = client_provider or LazyClient(settings)
    app.state.proxy_identity = settings.proxy_identity()
    # The open streams of each login session, so a logout here ends them before it answers.
    app.state.open_streams = OpenStreams()
    app.add_exception_handler(HttpError, render_http_error)
    app.add_exception_handler(RequestValidationError, render_validation_error)
    app.add_exception_handler(StoreUnavailable, render_store_unavailable)
    app.add_exception_handler(StoreFull, render_store_full)
    for router in (*FEATURE_ROUTERS, *door_routers()):
        app.include_router(router)
    # An asking token reaches /api/requests only: every other route answers it 403 (ui/asker_gate.py).
    app.add_middleware(AskerGate, store=store)
    # A Host header that is not ours is answered with 400 (DNS rebinding against a loopback UI).
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(settings.ui_host))
    # Identity headers count only from the configured proxy; from any other peer they are refused.
    app.add_middleware(ProxyPeerGate, identity=app.state.proxy_identity)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(BodyLimit)
    return app


def door_routers() -> list[APIRouter]:
    """The routes of every registered channel that is also a door (Slack's buttons: ui/slack.py)."""
    modules = [channel.door_router for channel in deciding_kinds().values() if channel.door_router]
    return [import_module(module).router for module in modules]


async def close_stores(app: FastAPI) -> None:
    """The projection store, and the ledger the metrics opened (if a scrape came)."""
    await app.state.store.close()
    ledger = getattr(app.state, "metrics_ledger", None)
    if ledger is not None:
        await ledger.close()


def uvicorn_config(settings: Settings, app: FastAPI | None = None, **options: Any) -> uvicorn.Config:
    """Open event streams would hold shutdown forever; give them a short grace instead."""
    options.setdefault("timeout_graceful_shutdown", 2)
    options.setdefault("log_level", "info")
    if settings.trusted_proxies:
        # The identity check needs the socket's peer: no rewriting of the client from X-Forwarded-For.
        options.setdefault("proxy_headers", False)
    return uvicorn.Config(app or create_app(settings), host=settings.ui_host, port=settings.ui_port, **options)


def serve(settings: Settings) -> None:
    """Serve the UI on settings.ui_host:ui_port (127.0.0.1:8000 unless UI_HOST / UI_PORT say otherwise)."""
    if settings.ui_token is None and settings.ui_host not in ("127.0.0.1", "localhost", "::1"):
        log.warning(
            "the approvals UI listens on %s without UI_TOKEN: anyone who reaches it can approve tools", settings.ui_host
        )
    uvicorn.Server(uvicorn_config(settings)).run()
