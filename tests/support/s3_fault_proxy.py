"""An HTTP proxy of the tests' own in front of an S3-compatible server (moto's), to make it fail.

`unavailable()` answers every request with S3's 503 SlowDown and a `Retry-After`, as a store
under too much load does; `slow(seconds)` forwards every request but holds its answer that long
first; `restore()` forwards again at once. It counts what it answered, so a test can see that
the fault was met and that the clients came back afterwards.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Literal
from urllib.parse import urlsplit

Mode = Literal["pass", "unavailable", "slow"]
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


class S3FaultProxy:
    def __init__(self, target_url: str, retry_after_seconds: int = 1) -> None:
        parts = urlsplit(target_url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.retry_after = retry_after_seconds
        self.mode: Mode = "pass"
        self.delay = 0.0
        self.answered: Counter[str] = Counter()  # "503", "503 to a write", "slow", "forwarded"
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> S3FaultProxy:
        self._thread.start()
        return self

    def unavailable(self) -> None:
        self.mode = "unavailable"

    def slow(self, seconds: float) -> None:
        self.delay, self.mode = seconds, "slow"

    def restore(self) -> None:
        self.mode = "pass"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> S3FaultProxy:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def _count(self, what: str) -> None:
        with self._lock:
            self.answered[what] += 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect

            def do_GET(self) -> None:
                self._answer()

            def do_PUT(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def do_HEAD(self) -> None:
                self._answer()

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.mode == "unavailable":
                    proxy._count("503")
                    if self.command != "GET":  # a write, or the look before one (HEAD)
                        proxy._count("503 to a write")
                    refusal = [("Content-Type", "application/xml"), ("Retry-After", str(proxy.retry_after))]
                    self._send(503, refusal, SLOW_DOWN)
                    return
                if proxy.mode == "slow":
                    proxy._count("slow")
                    time.sleep(proxy.delay)
                proxy._count("forwarded")
                upstream = http.client.HTTPConnection(*proxy.target, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    response = upstream.getresponse()
                    data = response.read()
                    kept = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
                    self._send(response.status, kept, data)
                finally:
                    upstream.close()

            def _send(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
                """A HEAD's answer keeps the object's length; any other's is the length of what is sent."""
                self.send_response(status)
                for name, value in headers:
                    if name.lower() != "content-length" or self.command == "HEAD":
                        self.send_header(name, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
