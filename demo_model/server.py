"""An OpenAI-compatible Chat Completions endpoint driven by a script, served over real HTTP.

The scripted demo model and the tests' fake models both run on this, so the real openai client
code path (HTTP, JSON, tool calls) runs everywhere. It counts every request it answers. A request
with `stream: true` is answered as Server-Sent Events in the chunk format (demo_model/streaming.py).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from demo_model.streaming import chunks, sse

Responder = Callable[[dict[str, Any]], dict[str, Any]]


class _HttpServer(ThreadingHTTPServer):
    # The stdlib's accept queue of 5 refuses bursts of concurrent model calls (a retried activity
    # a second later each time), which would measure the stand-in instead of the system.
    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A caller that left mid-answer (a cancelled call, a killed worker) is not the server's error."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class ScriptedHttpError(Exception):
    """Raised by a responder to answer with an OpenAI-style error status (401, 400, 429, 500...),
    with the response headers it names (`retry-after`, `x-should-retry`, ...)."""

    def __init__(
        self, status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


def text_reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool_reply(*calls: tuple[str, str, dict[str, Any] | str], text: str | None = None) -> dict[str, Any]:
    """calls: (tool_call_id, tool_name, arguments as a dict or as raw text)."""
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for call_id, name, args in calls
        ],
    }


def approximate_tokens(value: object) -> int:
    """The stand-in's token count: a quarter of the JSON's characters (real tokenizers are close)."""
    return len(json.dumps(value)) // 4


def completion(message: dict[str, Any], model: str, prompt_tokens: int = 0) -> dict[str, Any]:
    completion_tokens = approximate_tokens(message)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@dataclass
class ScriptedModelServer:
    responder: Responder
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    # `stream: true` requests: seconds between chunks, and how many of the next streams to break off
    # halfway (the connection drops before the finish, as when a model server dies mid-reply).
    chunk_delay: float = 0.0
    cut_streams: int = 0
    # How a `stream: true` request is answered: "events" (Server-Sent Events), or as servers that
    # cannot stream do: "json" (one whole reply, application/json), "empty" (200 and no body) or
    # "no_data_lines" (the whole reply under a text/event-stream header, with no `data:` line).
    stream_as: str = "events"

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                except json.JSONDecodeError as err:
                    return self._send(400, {"error": {"message": f"invalid JSON: {err}", "type": "invalid_request"}})
                with server._lock:
                    server.requests.append(body)
                try:
                    message = server.responder(body)
                except ScriptedHttpError as err:
                    error = {"message": str(err), "type": "scripted_error", "code": err.code}
                    return self._send(err.status, {"error": error}, headers=err.headers)
                except Exception as err:  # a script bug must show as an HTTP error, not a hang
                    return self._send(500, {"error": {"message": str(err), "type": "script_error"}})
                prompt = approximate_tokens(body.get("messages")) + approximate_tokens(body.get("tools") or [])
                answer = completion(message, str(body.get("model", "scripted")), prompt)
                if body.get("stream") and server.stream_as == "events":
                    return self._stream(message, answer, body)
                if body.get("stream") and server.stream_as == "empty":
                    return self._send(200, None, "text/event-stream")
                if body.get("stream") and server.stream_as == "no_data_lines":
                    return self._send(200, answer, "text/event-stream")
                self._send(200, answer)

            def _stream(self, message: dict[str, Any], answer: dict[str, Any], body: dict[str, Any]) -> None:
                with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                parts = list(chunks(message, answer["model"], answer["usage"] if with_usage else None))
                with server._lock:
                    cut = server.cut_streams > 0
                    server.cut_streams -= cut
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                for number, part in enumerate(parts):
                    if cut and number >= len(parts) // 2:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    self.wfile.write(sse(part))
                    self.wfile.flush()
                    if server.chunk_delay:
                        time.sleep(server.chunk_delay)
                self.wfile.write(sse("[DONE]"))

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [{"id": "scripted-demo", "object": "model"}]})
                if self.path.rstrip("/").endswith("/stats"):
                    # Lets a test in another process count the requests, e.g. after a worker restart.
                    return self._send(200, {"requests": server.request_count()})
                self._send(404, {"error": {"message": "not found"}})

            def _send(
                self,
                status: int,
                payload: dict[str, Any] | None,
                kind: str = "application/json",
                headers: dict[str, str] | None = None,
            ) -> None:
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _HttpServer((self.host, self.port), Handler)
        self.port = self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> ScriptedModelServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)
