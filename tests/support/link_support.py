"""What the decision-link tests share: a worker and the UI served over HTTP, the row's decision,
the links' recorded uses, and a refusal page's one line."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from temporalio.client import Client

from config.settings import Settings
from tests.support.helpers import approval_row, rows
from tests.support.ui_fixtures import ServedApp, served_app
from worker import build_worker


@asynccontextmanager
async def worker_and_ui(client: Client, settings: Settings) -> AsyncIterator[tuple[ServedApp, httpx.AsyncClient]]:
    """A worker, and the UI on a free port with its own Temporal client, as a browser reaches it."""
    async with build_worker(client, settings):
        served = served_app(settings, client.service_client.config.target_host)
        try:
            async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
                yield served, http
        finally:
            served.stop()


def decided(settings: Settings, request_id: str) -> tuple[Any, ...]:
    row = approval_row(settings.approvals_db, request_id)
    return row["decision"], row["decided_by"], row["reason"], row["resolved_at"]


def uses(settings: Settings) -> list[dict[str, Any]]:
    return rows(settings.approvals_db, "SELECT token_id, request_id, person, decision FROM ui_decision_links")


def refusal(page: httpx.Response) -> str:
    """The page's one line of why."""
    found = re.search(r'<p class="notice notice-error link-refusal" role="alert">(.*?)</p>', page.text)
    assert found, page.text
    return found[1]


async def resolved(settings: Settings, request_id: str) -> bool:
    return decided(settings, request_id)[0] is not None
