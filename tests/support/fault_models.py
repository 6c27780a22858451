"""A model server of the tests' own that fails the way real model servers fail, over real HTTP.

It stands in front of an upstream OpenAI-compatible server (the scripted demo model) and forwards
each Chat Completions request to it, until told to fail:

- `silent()`: it accepts the connection, reads the request and never answers it (a model server
  wedged on a GPU, a load balancer holding the request): the client's own timeout must end it.
- `half_stream(then="close" | "hang")`: a streamed reply goes out up to half of its `data:` lines
  (a tool call up to the middle of its arguments), then the connection closes in the middle of its
  chunked body, or stays open and sends nothing more.
- `rate_limit(hints, times)`: each conversation's next `times` requests are answered 429 with a
  hint's `retry-after` (and `retry-after-ms`), then forwarded again.

`restore()` ends the fault for the requests that come after it; a request held open stays so
until the client gives up (or the server stops). Every request is logged (`seen`) with its time,
the conversation it belongs to (its first user message) and what was done with it, so a test can
measure the waits between attempts. Streams are sent as HTTP/1.1 chunked bodies, as vLLM's and OpenAI's servers send
them, so a cut mid-body is a protocol error to the client, not a clean end.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import urlsplit

Mode = Literal["pass", "silent", "half_stream_close", "half_stream_hang", "rate_limited"]


@dataclass(frozen=True)
class SeenRequest:
    at: float  # time.monotonic() when the request arrived
    conversation: str  # the first user message: the marker a scenario gives each conversation
    handled: Mode  # what the server did with it ("pass": forwarded whole)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (its own timeout) is what these faults are about, not an error."""


class FaultModelServer:
    def __init__(self, upstream_base_url: str, host: str = "127.0.0.1") -> None:
        upstream = urlsplit(upstream_base_url)
        self._upstream = (upstream.hostname or "127.0.0.1", upstream.port or 80, upstream.path.rstrip("/"))
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # what a held request waits for: it is never answered
        self.mode: Mode = "pass"
        self.seen: list[SeenRequest] = []
        self._limits: dict[str, int] = {}  # conversation: requests refused so far
        self._hints: list[dict[str, str]] = []
        self._times = 0
        self._httpd = _HttpServer((host, 0), self._handler())
        self.port = int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultModelServer:
        threading.Thread(target=self._httpd.serve_forever, name="fault-model", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def silent(self) -> None:
        self._set("silent")

    def half_stream(self, then: Literal["close", "hang"]) -> None:
        self._set("half_stream_close" if then == "close" else "half_stream_hang")

    def rate_limit(self, hints: Sequence[dict[str, str]], times: int = 1) -> None:
        """Each conversation's next `times` requests are refused with 429, carrying the headers of
        one hint (`retry-after`, `retry-after-ms`): the k-th conversation refused gets hint k, in
        turn, so one run shows each hint honoured side by side."""
        with self._lock:
            self._limits, self._hints, self._times = {}, list(hints), times
        self._set("rate_limited")

    def restore(self) -> None:
        self._set("pass")

    def requests_of(self, conversation: str) -> list[SeenRequest]:
        with self._lock:
            return [seen for seen in self.seen if seen.conversation == conversation]

    def _set(self, mode: Mode) -> None:
        with self._lock:
            self.mode = mode

    def _decide(self, body: dict[str, Any]) -> tuple[Mode, dict[str, str]]:
        """What to do with this request (and the headers of a refusal), logged as it arrives."""
        messages = body.get("messages") or []
        conversation = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        with self._lock:
            handled = self.mode
            headers: dict[str, str] = {}
            if handled == "rate_limited":
                used = self._limits.setdefault(conversation, 0)
                if used >= self._times:
                    handled = "pass"
                else:
                    self._limits[conversation] = used + 1
                    headers = self._hints[list(self._limits).index(conversation) % len(self._hints)]
            if handled.startswith("half_stream") and not body.get("stream"):
                handled = "pass"  # a whole reply has no half to send
            self.seen.append(SeenRequest(time.monotonic(), conversation, handled))
            return handled, headers

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self._forward_whole("GET", b"")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    return self._forward_whole("POST", raw)
                handled, headers = server._decide(body)
                if handled == "silent":
                    server._stopping.wait()
                    return self._drop()
                if handled == "rate_limited":
                    error = {"error": {"message": "rate limit reached, slow down", "type": "rate_limit_error"}}
                    return self._answer(429, "application/json", json.dumps(error).encode(), headers)
                if not body.get("stream"):
                    return self._forward_whole("POST", raw)
                self._forward_stream(raw, handled)

            def _forward_whole(self, method: str, raw: bytes) -> None:
                answer = server._ask(method, self.path, raw)
                try:
                    data = answer.read()
                finally:
                    answer.close()
                kind = answer.getheader("Content-Type", "application/json")
                self._answer(answer.status, kind, data, {})

            def _forward_stream(self, raw: bytes, handled: Mode) -> None:
                answer = server._ask("POST", self.path, raw)
                try:
                    lines = [line for line in answer.read().split(b"\n\n") if line.strip()]
                finally:
                    answer.close()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.getheader("Content-Type", "text/event-stream"))
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                keep = _half(lines) if handled.startswith("half_stream") else len(lines)
                for line in lines[:keep]:
                    self._chunk(line + b"\n\n")
                if keep < len(lines):
                    if handled == "half_stream_hang":
                        server._stopping.wait()
                    return self._drop()
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _answer(self, status: int, kind: str, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _drop(self) -> None:
                """Close without finishing the answer (or without one at all); the handler's next
                read finds the socket shut and ends the connection."""
                try:
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def _ask(self, method: str, path: str, raw: bytes) -> http.client.HTTPResponse:
        host, port, base = self._upstream
        upstream = http.client.HTTPConnection(host, port, timeout=60)
        route = base + path[len("/v1") :] if path.startswith("/v1") else path
        upstream.request(method, route, body=raw or None, headers={"Content-Type": "application/json"})
        return upstream.getresponse()


def _half(lines: list[bytes]) -> int:
    """How many `data:` lines half a reply is: up to the middle of its tool calls' arguments (the
    worst place to stop: a call that may look whole but is not), else half of them."""
    arguments = [n for n, line in enumerate(lines) if b'"arguments": "' in line and b'"name"' not in line]
    if len(arguments) >= 2:
        return arguments[len(arguments) // 2]
    return len(lines) // 2
