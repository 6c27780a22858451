"""Ask a person before acting, from anything that runs Python: the standard library only (urllib).

    python examples/http_ask.py --url http://127.0.0.1:8000 --token "$ASK_TOKEN" \\
        --key build-42 run_shell '{"command": "make deploy"}' && make deploy

It posts the request to the approvals UI (`POST /api/requests`), long-polls until a person (or a
rule) decides (`GET /api/requests/{id}?wait=...`), prints the result as JSON and exits 0 when the
call may run (allow, or edit: run the printed `arguments`), 1 when it may not (deny, expired,
canceled, an invalid request), 2 when it could not ask (usage, network, HTTP error). The same
`--key` asks once: run it again and it finds the same request, decided or still waiting. Ctrl-C
cancels the request. The token is an asking token (`starter.py users add ci --asker`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

POLL_SECONDS = 30.0
APPROVED = ("allow", "edit")


class AskFailed(Exception):
    """The service could not be asked, or refused the request (its one-line error)."""


def call(
    url: str, token: str | None, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30.0
) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as err:
        try:
            message = json.loads(err.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = err.reason
        raise AskFailed(f"{method} {path}: {err.code} {message}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise AskFailed(f"{method} {path}: {err}") from None


def ask(url: str, token: str | None, key: str, tool: str, arguments: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Start the request (or find the one this key started): {request_id, status, result?}."""
    body = {"key": key, "tool": tool, "arguments": arguments, **{k: v for k, v in fields.items() if v is not None}}
    return call(url, token, "POST", "/api/requests", body)


def status(url: str, token: str | None, request_id: str, wait: float = 0.0) -> dict[str, Any]:
    quoted = urllib.parse.quote(request_id, safe="")
    return call(url, token, "GET", f"/api/requests/{quoted}?wait={wait:g}", timeout=wait + 30.0)


def cancel(url: str, token: str | None, request_id: str) -> dict[str, Any]:
    return call(url, token, "DELETE", f"/api/requests/{urllib.parse.quote(request_id, safe='')}")


def wait_for_decision(
    url: str, token: str | None, answer: dict[str, Any], poll: float = POLL_SECONDS
) -> dict[str, Any]:
    """Long-poll until the request is no longer pending; the last answer."""
    while answer["status"] == "pending":
        answer = status(url, token, answer["request_id"], wait=poll)
    return answer


def approved(answer: dict[str, Any]) -> bool:
    return answer.get("status") == "decided" and answer["result"]["decision"] in APPROVED


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Ask the approvals inbox and wait for the answer.")
    parser.add_argument("--url", default=os.environ.get("APPROVALS_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("APPROVALS_TOKEN"), help="default: $APPROVALS_TOKEN")
    parser.add_argument("--key", required=True, help="the idempotency key: the same key, the same request")
    parser.add_argument("--title", help="one line for the card")
    parser.add_argument("--context", help="why, in the asker's words")
    parser.add_argument("--timeout", type=float, dest="timeout_seconds", help="seconds until the request expires")
    parser.add_argument("--poll", type=float, default=POLL_SECONDS, help="seconds per long poll (at most 60)")
    parser.add_argument("tool", help="the tool or action's name, as the rules match it")
    parser.add_argument("arguments", nargs="?", default="{}", help="its arguments, a JSON object")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        arguments = json.loads(args.arguments)
        if not isinstance(arguments, dict):
            raise ValueError("not a JSON object")
    except ValueError as err:
        print(f"http_ask: the arguments must be a JSON object: {err}", file=sys.stderr)
        return 2
    answer: dict[str, Any] = {}
    try:
        fields = {"title": args.title, "context": args.context, "timeout_seconds": args.timeout_seconds}
        answer = ask(args.url, args.token, args.key, args.tool, arguments, **fields)
        print(f"http_ask: request {answer['request_id']} is {answer['status']}", file=sys.stderr)
        answer = wait_for_decision(args.url, args.token, answer, args.poll)
    except AskFailed as err:
        print(f"http_ask: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if answer.get("request_id"):
            cancel(args.url, args.token, answer["request_id"])
            print(f"http_ask: canceled {answer['request_id']}", file=sys.stderr)
        return 1
    print(json.dumps(answer.get("result", answer), indent=2))
    return 0 if approved(answer) else 1


if __name__ == "__main__":
    sys.exit(main())
