"""Naming what went wrong with a model call, so the recorded error says the real cause.

A timeout says how long it waited, a refused connection names the address, an HTTP error gives the
status and the server's own message. A context-window error is told apart from any other refusal:
OpenAI answers 400 with the code `context_length_exceeded`; other servers say it in words (vLLM,
llama.cpp, Ollama, Azure, Anthropic- and Gemini-compatible endpoints) or answer 413.
"""

from __future__ import annotations

import re

import openai
from temporalio.exceptions import ApplicationError

from workflows.activity_calls import ERROR_CONTEXT_WINDOW

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


def _refused(err: BaseException) -> bool:
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def model_failure(err: openai.APIError, base_url: str, timeout: float) -> ApplicationError:
    """The activity's error for a failed request; raise it `from None`, so this message is the
    innermost one (the workflow records the innermost cause)."""
    if isinstance(err, openai.APITimeoutError):
        return ApplicationError(f"request timed out after {timeout:g} s", type="LlmTimeout")
    if isinstance(err, openai.APIConnectionError):
        if _refused(err):
            return ApplicationError(f"connection refused ({base_url})", type="LlmUnreachable")
        cause = err.__cause__ or err.__context__
        return ApplicationError(f"could not reach the model server ({base_url}): {cause or err}", type="LlmUnreachable")
    if not isinstance(err, openai.APIStatusError):
        return ApplicationError(f"the model call failed: {err}", type="LlmError")
    said = f"HTTP {err.status_code} from the model server: {server_message(err)}"
    if is_context_window_error(err.status_code, err.code, str(err.message)):
        return ApplicationError(
            f"the request does not fit the model's context window: {said}",
            type=ERROR_CONTEXT_WINDOW,
            non_retryable=True,
        )
    # Refusals a retry cannot heal, named so the retry policy stops at once.
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        return ApplicationError(
            f"the model refused the credentials: {said}", type="LlmAuthentication", non_retryable=True
        )
    if isinstance(err, openai.BadRequestError | openai.NotFoundError | openai.UnprocessableEntityError):
        return ApplicationError(f"the model rejected the request: {said}", type="LlmBadRequest", non_retryable=True)
    return ApplicationError(said, type="LlmServerError")
