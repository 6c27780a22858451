"""The app's route table: every URL of the HTTP API is served exactly once, by its feature's module.

A route defined twice (the second never answers), a route lost when a module moves, or a feature's
routes spread over several modules all show here, without starting a server."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from config.settings import Settings
from ui.server import create_app

# (method, path) -> the module that owns that feature's routes.
SERVED = {
    ("GET", "/"): "ui.pages",
    ("GET", "/approvals/{request_id:path}"): "ui.pages",
    ("GET", "/login"): "ui.pages",
    ("POST", "/login"): "ui.pages",
    ("POST", "/logout"): "ui.pages",
    ("GET", "/static/{name}"): "ui.pages",
    ("GET", "/d/{token}"): "ui.link_routes",
    ("POST", "/d/{token}"): "ui.link_routes",
    ("GET", "/api/conversations"): "ui.conversation_routes",
    ("POST", "/api/conversations"): "ui.conversation_routes",
    ("GET", "/api/conversations/{conversation_id:path}"): "ui.conversation_routes",
    ("POST", "/api/conversations/{conversation_id:path}/messages"): "ui.conversation_routes",
    ("POST", "/api/conversations/{conversation_id:path}/close"): "ui.conversation_routes",
    ("POST", "/api/conversations/{conversation_id:path}/auto-approve"): "ui.conversation_routes",
    ("GET", "/api/approvals"): "ui.approval_routes",
    ("GET", "/api/approvals/{request_id:path}"): "ui.approval_routes",
    ("POST", "/api/approvals/{request_id:path}/decision"): "ui.approval_routes",
    ("POST", "/api/approvals/decisions"): "ui.approval_routes",
    ("POST", "/api/approvals/{request_id:path}/extend"): "ui.approval_routes",
    ("GET", "/api/grants"): "ui.grant_routes",
    ("POST", "/api/grants"): "ui.grant_routes",
    ("DELETE", "/api/grants/{grant_id:path}"): "ui.grant_routes",
    ("GET", "/api/elicitations"): "ui.elicitation_routes",
    ("GET", "/api/elicitations/{question_id:path}"): "ui.elicitation_routes",
    ("POST", "/api/elicitations/{question_id:path}/answer"): "ui.elicitation_routes",
    ("POST", "/api/approvals/{request_id:path}/undo"): "ui.undo_routes",
    ("POST", "/api/requests"): "ui.request_routes",
    ("GET", "/api/requests/{request_id}"): "ui.request_routes",
    ("DELETE", "/api/requests/{request_id}"): "ui.request_routes",
    ("GET", "/api/session"): "ui.team_routes",
    ("GET", "/api/audit"): "ui.team_routes",
    ("GET", "/api/events"): "ui.events",
    ("POST", "/slack/actions"): "ui.slack",
    ("POST", "/ag-ui"): "ui.agui_routes",
    ("GET", "/metrics"): "ui.metrics_routes",
    ("GET", "/api/stats"): "ui.analytics_routes",
    ("GET", "/api/rules/suggest"): "ui.analytics_routes",
    ("GET", "/analytics"): "ui.analytics_routes",
    ("GET", "/api/push/key"): "ui.push_routes",
    ("POST", "/api/push/subscriptions"): "ui.push_routes",
    ("DELETE", "/api/push/subscriptions"): "ui.push_routes",
    ("GET", "/sw.js"): "ui.push_routes",
    ("GET", "/api/openapi.json"): "fastapi.applications",
    ("HEAD", "/api/openapi.json"): "fastapi.applications",
}


def _routes(app: FastAPI) -> Iterator[Any]:
    """Every route the app serves, through the routers it includes."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # a FastAPI whose app.routes is already the flat list
        yield from app.routes
        return
    yield from iter_route_contexts(app.routes)


def _served(app: FastAPI) -> list[tuple[str, str, str]]:
    return [(method, route.path, route.endpoint.__module__) for route in _routes(app) for method in route.methods]


async def test_every_url_is_served_once_by_its_features_module(tmp_path: Path) -> None:
    app = create_app(Settings(approvals_db=tmp_path / "approvals.db"))
    try:
        served = _served(app)
    finally:
        await app.state.store.close()
    counts = Counter((method, path) for method, path, _ in served)
    assert [url for url, n in counts.items() if n > 1] == []
    assert sorted(counts) == sorted(SERVED)
    assert {(method, path): module for method, path, module in served} == SERVED
