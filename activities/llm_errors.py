"""Naming what went wrong with a model call, so the recorded error says the real cause.

A timeout says how long it waited, a refused connection names the address, an HTTP error gives the
status and the server's own message. A context-window error is told apart from any other refusal:
OpenAI answers 400 with the code `context_length_exceeded`; other servers say it in words (vLLM,
llama.cpp, Ollama, Azure, Anthropic- and Gemini-compatible endpoints) or answer 413.

Temporal owns the retries (the client has max_retries=0), so the server's own hints reach its retry
policy here: `retry-after-ms` or `retry-after` (seconds or an HTTP date) become the error's
`next_retry_delay`, capped at MAX_RETRY_DELAY; `x-should-retry: false` makes it non-retryable and
`x-should-retry: true` retryable, whatever the status says (as the openai client itself would judge
it with retries on).
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import openai
from temporalio.exceptions import ApplicationError

from core.contract import (
    ERROR_CONTEXT_WINDOW,
    ERROR_LLM_AUTHENTICATION,
    ERROR_LLM_BAD_REQUEST,
    ERROR_LLM_ERROR,
    ERROR_LLM_RATE_LIMITED,
    ERROR_LLM_SERVER_ERROR,
    ERROR_LLM_TIMEOUT,
    ERROR_LLM_UNREACHABLE,
)

CONTEXT_ERROR_CODES = frozenset(
    {"context_length_exceeded", "string_above_max_length", "exceed_context_size_error", "context_window_exceeded"}
)
_CONTEXT_PHRASES = re.compile(
    r"context[ _-]?(?:length|window|size)"
    r"|maximum (?:context|input) length"
    r"|prompt is too long"
    r"|too many (?:input )?tokens"
    r"|input (?:is )?too long"
    r"|reduce the length of the (?:messages|input|prompt)"
    r"|exceeds? the (?:maximum|max) (?:number of )?(?:input )?tokens",
    re.IGNORECASE,
)
SERVER_MESSAGE_CHARS = 500
# The longest wait a server's retry hint may ask for: past it the retry policy's attempts go on at
# this pace, so a server that asks for an hour cannot park a turn for hours.
MAX_RETRY_DELAY = timedelta(seconds=60)


def is_context_window_error(status: int | None, code: str | None, message: str) -> bool:
    if code is not None and code.lower() in CONTEXT_ERROR_CODES:
        return True
    if status == 413:
        return True
    return status in (400, 422) and bool(_CONTEXT_PHRASES.search(message))


def server_message(err: openai.APIStatusError) -> str:
    """What the server said: the `message` of its error object, FastAPI's `detail`, or its text."""
    body = err.body
    if isinstance(body, dict):
        said = body.get("message") or body.get("detail") or body
    else:
        said = body if body else err.response.text
    text = str(said).strip() or err.response.reason_phrase or "no message"
    return text[:SERVER_MESSAGE_CHARS]


def _seconds(value: str | None, scale: float = 1.0) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number * scale if math.isfinite(number) else None


def _seconds_until(http_date: str, now: datetime) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


def retry_hint(headers: Mapping[str, str], now: datetime | None = None) -> timedelta | None:
    """How long the server asks to wait before the next attempt: `retry-after-ms`, else
    `retry-after` in seconds or as an HTTP date, capped at MAX_RETRY_DELAY. None when it asks
    nothing usable (no header, no number, a date already past): the retry policy's own interval."""
    seconds = _seconds(headers.get("retry-after-ms"), scale=0.001)
    if seconds is None and (after := headers.get("retry-after")) is not None:
        seconds = _seconds(after)
        if seconds is None:
            seconds = _seconds_until(after, now or datetime.now(UTC))
    if seconds is None or seconds <= 0:
        return None
    return min(timedelta(seconds=seconds), MAX_RETRY_DELAY)


def should_retry(headers: Mapping[str, str]) -> bool | None:
    """The server's `x-should-retry`: True or False when it says, None when it does not."""
    said = (headers.get("x-should-retry") or "").strip().lower()
    return {"true": True, "false": False}.get(said)


def _by_status(err: openai.APIStatusError, said: str) -> tuple[str, str, bool]:
    """The type, message and retryability the status alone gives. Refusals a retry cannot heal
    are named so the retry policy stops at once (LLM_RETRY's non-retryable types)."""
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        return ERROR_LLM_AUTHENTICATION, f"the model refused the credentials: {said}", False
    if isinstance(err, openai.BadRequestError | openai.NotFoundError | openai.UnprocessableEntityError):
        return ERROR_LLM_BAD_REQUEST, f"the model rejected the request: {said}", False
    if err.status_code == 429:
        return ERROR_LLM_RATE_LIMITED, said, True
    return ERROR_LLM_SERVER_ERROR, said, True


def _refused(err: BaseException) -> bool:
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def cause_text(err: BaseException) -> str:
    """What went wrong below the client's own words ("Connection error."): the first cause down
    the chain that says something. A reset connection's transport errors say nothing; only the
    socket's own error at the bottom does (`[Errno 104] Connection reset by peer`)."""
    seen, innermost = err.__cause__ or err.__context__, err
    while seen is not None:
        if str(seen).strip():
            return str(seen).strip()
        innermost, seen = seen, seen.__cause__ or seen.__context__
    return type(innermost).__name__ if innermost is not err else str(err).strip() or type(err).__name__


def model_failure(err: openai.APIError, base_url: str, timeout: float) -> ApplicationError:
    """The activity's error for a failed request; raise it `from None`, so this message is the
    innermost one (the workflow records the innermost cause)."""
    if isinstance(err, openai.APITimeoutError):
        return ApplicationError(f"request timed out after {timeout:g} s", type=ERROR_LLM_TIMEOUT)
    if isinstance(err, openai.APIConnectionError):
        if _refused(err):
            return ApplicationError(f"connection refused ({base_url})", type=ERROR_LLM_UNREACHABLE)
        return ApplicationError(
            f"could not reach the model server ({base_url}): {cause_text(err)}", type=ERROR_LLM_UNREACHABLE
        )
    if not isinstance(err, openai.APIStatusError):
        return ApplicationError(f"the model call failed: {err}", type=ERROR_LLM_ERROR)
    said = f"HTTP {err.status_code} from the model server: {server_message(err)}"
    if is_context_window_error(err.status_code, err.code, str(err.message)):
        return ApplicationError(
            f"the request does not fit the model's context window: {said}",
            type=ERROR_CONTEXT_WINDOW,
            non_retryable=True,
        )
    error_type, message, retryable = _by_status(err, said)
    asked = should_retry(err.response.headers)
    if asked is False and retryable:
        return ApplicationError(f"{message} (the server says not to retry)", type=error_type, non_retryable=True)
    if asked is True and not retryable:
        # The server says a retry can heal it: a type the retry policy does not stop at.
        error_type, message = ERROR_LLM_SERVER_ERROR, f"{said} (the server asks for a retry)"
    elif not retryable:
        return ApplicationError(message, type=error_type, non_retryable=True)
    return ApplicationError(message, type=error_type, next_retry_delay=retry_hint(err.response.headers))
