"""What every feature's API routes share: the guarded `/api` router, the app's state (settings,
store, Temporal client), the empty-id check, paging, and who a decision or a switch is recorded as."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from temporalio.client import Client

from config.settings import Settings
from storage.backend import Backend, open_backend
from storage.reader import Page
from storage.store import ProjectionStore
from ui import queries
from ui.errors import NotFound, Unprocessable
from ui.security import principal_of, require_same_origin, require_token


def api_router() -> APIRouter:
    """A feature's router: under `/api`, behind the token and the same-origin check.

    Ids may hold any character, "/" included: the page sends them percent-encoded, the server
    decodes them, and the :path converters take the rest of the path (a fixed suffix such as
    `/decision` or `/close` is matched after it)."""
    return APIRouter(prefix="/api", dependencies=[Depends(require_token), Depends(require_same_origin)])


def settings_of(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def store_of(request: Request) -> ProjectionStore:
    return request.app.state.store  # type: ignore[no-any-return]


def ledger_of(request: Request) -> Backend:
    """The execution ledger (delivered notifications), opened once per app on first use, read only."""
    state = request.app.state
    if getattr(state, "metrics_ledger", None) is None:
        state.metrics_ledger = open_backend(settings_of(request).ledger_db, "ledger")
    return state.metrics_ledger  # type: ignore[no-any-return]


async def client_of(request: Request) -> Client:
    return await request.app.state.client_provider()  # type: ignore[no-any-return]


def require_id(value: str, what: str) -> None:
    if not value:
        raise NotFound(f"no {what} with an empty id")


def page_size(limit: int | None) -> int:
    if limit is None:
        return queries.DEFAULT_PAGE
    if not 1 <= limit <= queries.MAX_PAGE:
        raise Unprocessable(f"limit must be between 1 and {queries.MAX_PAGE}")
    return limit


def paged(request: Request, response: Response, page: Page) -> list[dict[str, Any]]:
    """The body stays a plain list; the next page is named in `X-Next-Cursor` and a `Link` header."""
    if page.next is not None:
        response.headers["X-Next-Cursor"] = page.next
        response.headers["Link"] = f'<{request.url.include_query_params(after=page.next)}>; rel="next"'
    return page.items


async def identity(request: Request, name: str | None) -> dict[str, Any]:
    """Who decides: a person's own token names them (a typed name is ignored); otherwise the typed
    name, or `web`, with no verified principal (enough only for calls no approver rule covers)."""
    principal = await principal_of(request)
    if principal is None:
        return {"decided_by": name or "web"}
    return {"decided_by": principal.name, "principal": principal.name, "groups": principal.groups}


async def switcher(request: Request) -> str | None:
    """Who flips a switch: the signed-in person; None when the page is used with the shared token only."""
    principal = await principal_of(request)
    return None if principal is None else principal.name
