"""`/d/{token}`: a one-time decision link's page (GET) and its form (POST), door `link`.

The token is the credential: no login and no session cookie, so these routes sit outside the
token-guarded `/api` router. GET only shows (mail scanners and link previews fetch links, so it
must decide nothing); POST decides once, as the token's person, through doors/decision_links.py.
Every refusal is a page with a 4xx status and one line, and changes nothing.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from core.contract import (
    ERROR_ALREADY_RESOLVED,
    ERROR_BAD_LINK,
    ERROR_CONVERSATION_CLOSED,
    ERROR_CROSS_SITE_REQUEST,
    ERROR_INVALID_DECISION,
    ERROR_LINK_EXPIRED,
    ERROR_LINK_USED,
    ERROR_NOT_AN_APPROVER,
    ERROR_STALE_APPROVAL,
    ERROR_UNDELIVERED,
    ERROR_UNKNOWN_APPROVAL,
)
from core.refusals import DecisionRefused
from doors.decision_links import decide_by_link, open_link
from ui.bodies import read_body
from ui.errors import HttpError
from ui.link_page import card_page, decided_page, refusal_page
from ui.security import origin_of

LINK_BODY_BYTES = 8192  # a decision and a reason of at most 2000 characters, form-encoded
MAX_REASON = 2000
router = APIRouter(include_in_schema=False)  # pages, not API

# How each refusal is answered: a forged or damaged token, an expired one, a used one, and the
# refusals every door shares (core/refusals.py).
STATUS_OF = {
    ERROR_BAD_LINK: 403,
    ERROR_NOT_AN_APPROVER: 403,
    ERROR_CROSS_SITE_REQUEST: 403,
    ERROR_UNKNOWN_APPROVAL: 404,
    ERROR_LINK_USED: 409,
    ERROR_ALREADY_RESOLVED: 409,
    ERROR_STALE_APPROVAL: 409,
    ERROR_CONVERSATION_CLOSED: 409,
    ERROR_LINK_EXPIRED: 410,
    ERROR_INVALID_DECISION: 400,
    ERROR_UNDELIVERED: 503,
}


def refused(err: DecisionRefused) -> HTMLResponse:
    return refusal_page(STATUS_OF.get(err.error_type, 409), str(err))


@router.get("/d/{token}")
async def link_page(request: Request, token: str) -> HTMLResponse:
    """The request's card and the form; decides nothing."""
    state = request.app.state
    try:
        claims, row = await open_link(state.settings, state.store, token)
    except DecisionRefused as err:
        return refused(err)
    return card_page(token, claims, row)


@router.post("/d/{token}")
async def link_decision(request: Request, token: str) -> HTMLResponse:
    """Decide once: the form's `decision` (allow or deny) and `reason`; the token names the rest."""
    cross_site = _cross_site(request)
    if cross_site:
        return refusal_page(403, cross_site)
    try:
        fields = parse_qs((await read_body(request, LINK_BODY_BYTES)).decode(), max_num_fields=5)
    except HttpError as err:  # a body past the limit
        return refusal_page(err.status, err.message)
    except (UnicodeDecodeError, ValueError):
        return refusal_page(400, "send the link's form as application/x-www-form-urlencoded")
    decision = (fields.get("decision") or [""])[0]
    reason = (fields.get("reason") or [""])[0].strip()
    if len(reason) > MAX_REASON:
        return refusal_page(400, f"the reason is longer than {MAX_REASON} characters")
    state = request.app.state
    try:
        client = await state.client_provider()
        claims, row = await decide_by_link(client, state.settings, state.store, token, decision, reason)
    except DecisionRefused as err:
        return refused(err)
    except HttpError as err:  # Temporal not reachable: nothing was sent
        return refusal_page(err.status, err.message)
    return decided_page(claims, decision, row)


def _cross_site(request: Request) -> str | None:
    """Only the link's own page posts its form. Its no-referrer policy makes the browser send
    `Origin: null`, so null passes; another site's origin, or Sec-Fetch-Site saying so, does not."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {fetch_site})"
    origin = request.headers.get("origin")
    ours = origin_of(f"{request.url.scheme}://{request.headers.get('host', '')}")
    if origin is not None and origin != "null" and origin_of(origin) != ours:
        return "cross-origin request refused (Origin is not this UI's)"
    return None
