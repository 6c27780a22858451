"""The pages of a one-time decision link: the request's card with Approve and Deny, the answer to a
decision, and a refusal. Self-contained HTML with the inbox's card classes and style.css, no script:
the form works without JavaScript, and the CSP forbids inline script anyway.

Everything the model, a person or an id wrote goes through `shown` (hidden characters escaped as
`\\u202e` and flagged, as core/visible.py does for every door, then HTML-escaped), never as markup.
"""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from typing import Any

from fastapi.responses import HTMLResponse

from core.decision_links import LinkClaims
from core.visible import reveal

# No Referer leaves the page (the token is in its address), nothing is kept by a cache.
LINK_HEADERS = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
HIDDEN_FLAG_TEXT = (
    "Contains hidden characters: they are shown escaped (like \\u202e). What runs is exactly the text as written."
)
SOURCE_WORDS = {"builtin": "Built-in tool", "python": "Python tool from", "mcp": "MCP server", "subagent": "Subagent"}
DECIDED_WORDS = {"allow": "Approved", "deny": "Denied"}


def shown(text: object, multiline: bool = False) -> tuple[str, bool]:
    """Safe HTML for untrusted text, and whether it held hidden characters."""
    revealed = reveal(str(text), multiline=multiline)
    return html.escape(revealed.text), revealed.hidden


def text(value: object, multiline: bool = False) -> str:
    return shown(value, multiline)[0]


def card_page(token: str, claims: LinkClaims, row: dict[str, Any]) -> HTMLResponse:
    """The request as the inbox's card shows it, and the form that decides it once."""
    form = f"""<form method="post" action="/d/{html.escape(token)}" class="link-form">
<p class="card-approvers">Deciding as <strong class="link-person">{text(claims.person)}</strong>.
This link works once; it expires {_time(claims.expires_at)}.</p>
<label class="reason-label" for="reason">Reason (optional, the model reads it)</label>
<input class="reason" id="reason" name="reason" maxlength="2000" autocomplete="off">
<div class="actions">
<button type="submit" name="decision" value="allow" class="button-allow primary">Approve</button>
<button type="submit" name="decision" value="deny" class="button-deny danger">Deny</button>
</div>
</form>"""
    return _page(f"Decide: {row['tool_name']}", "Approval request", _card(row, claims.args_hash, form))


def decided_page(claims: LinkClaims, decision: str, row: dict[str, Any]) -> HTMLResponse:
    """After the form's post: what was decided, by whom; the card without its form."""
    word = DECIDED_WORDS.get(decision, decision)
    recorded = "recorded" if row["status"] == "resolved" else "sent to the conversation"
    required = int(row.get("required") or 1)
    missing = required - len(row.get("approved_by") or [])
    if decision == "allow" and required > 1 and row["status"] == "pending" and missing > 0:
        recorded = f"it still needs {missing} more approval(s) before it runs"
    outcome = f'<p class="card-outcome outcome-{html.escape(decision)}" role="status">{word} by {text(claims.person)}'
    outcome += f" through this link ({recorded}).</p>"
    return _page(f"{word}: {row['tool_name']}", word, _card(row, claims.args_hash, outcome))


def refusal_page(status: int, message: str) -> HTMLResponse:
    """A link that decides nothing: why, in one line."""
    body = f'<p class="notice notice-error link-refusal" role="alert">{text(message)}</p>'
    body += '<p class="empty">Nothing was decided. Ask for a new link, or decide in the inbox.</p>'
    return _page("This link decides nothing", "This link decides nothing", body, status)


def _card(row: dict[str, Any], args_hash: str, ending: str) -> str:
    tool, tool_hidden = shown(row["tool_name"])
    arguments, args_hidden = shown(json.dumps(row["arguments"], indent=2, ensure_ascii=False), multiline=True)
    why, why_hidden = _why(row.get("why") or {})
    hidden = tool_hidden or args_hidden or why_hidden
    flag = f'<p class="hidden-flag" role="alert">{HIDDEN_FLAG_TEXT}</p>\n' if hidden else ""
    permission = html.escape(str(row["permission_type"]))
    return f"""<article class="card approval approval-{html.escape(str(row["status"]))}" \
data-request-id="{html.escape(str(row["request_id"]))}">
<header class="card-head"><span class="tool-name">{tool}</span>
<span class="permission permission-{permission}">{permission}</span></header>
{_requester(row)}
{flag}<p class="card-label">Will run with these arguments:</p>
<div class="arguments-block"><pre class="arguments">{arguments}</pre></div>
{why}<p class="card-hash">Arguments hash <code class="args-hash">{text(args_hash)}</code></p>
<p class="card-times">Asked {_time(row.get("created_at"))}<br>Expires {_time(row.get("expires_at"))}</p>
{ending}
</article>"""


def _requester(row: dict[str, Any]) -> str:
    """Who asks: another workflow's request names it; a conversation's call names the conversation."""
    tool = row.get("tool") or {}
    source = str(tool.get("source", "builtin"))
    if source == "external":
        card = tool.get("annotations") or {}
        requester = (card.get("requester") or {}).get("workflow_id")
        line = f"Asked by {text(tool.get('origin', '?'))}"
        line += f" (workflow {text(requester)})" if requester else ""
        line += f" · {text(card['title'])}" if card.get("title") else ""
        line += f" · why: {text(card['context'])}" if card.get("context") else ""
    else:
        origin = SOURCE_WORDS.get(source, "MCP server")
        line = origin if source == "builtin" else f"{origin} {text(tool.get('origin', '?'))}"
        line += f", asked in conversation <code>{text(row['conversation_id'])}</code>"
        line += f", working for <code>{text(row['parent_id'])}</code>" if row.get("parent_id") else ""
    request = f'<p class="card-conversation">Request <code>{text(row["request_id"])}</code></p>'
    return f'<p class="card-origin">{line}</p>\n{request}'


def _why(why: dict[str, Any]) -> tuple[str, bool]:
    """Why the agent wants the call (core/why.py), each text shown escaped; ('', False) when none."""
    lines, hidden = [], False
    for label, key, cls in (
        ("Task from the parent:", "parent_task", "why-parent"),
        ("The user asked:", "user_message", "why-user"),
        ("The assistant said:", "assistant_text", "why-assistant"),
    ):
        if why.get(key):
            said, flagged = shown(why[key], multiline=True)
            hidden = hidden or flagged
            lines.append(f'<p class="why-line {cls}"><strong>{label}</strong> <span class="why-text">{said}</span></p>')
    return (f'<section class="card-why">{"".join(lines)}</section>\n' if lines else ""), hidden


def _time(value: Any) -> str:
    """A moment as `2026-11-30 08:10 UTC` (no script on this page to make it local)."""
    if value is None or value == "":
        return "never"
    if isinstance(value, int | float):
        moment = datetime.fromtimestamp(value, UTC)
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return text(value)
    return f'<time datetime="{moment.isoformat()}">{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC</time>'


def _page(title: str, heading: str, body: str, status: int = 200) -> HTMLResponse:
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{text(title)}</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/style.css">
</head>
<body class="link-page">
<main class="link-main">
<h1>{text(heading)}</h1>
{body}
</main>
</body>
</html>
"""
    return HTMLResponse(page, status_code=status, headers=LINK_HEADERS)
