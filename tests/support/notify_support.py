"""A real HTTP receiver for notifications (webhooks, Slack messages, Slack response_url updates),
the receiver's side of the signature check, and Slack's request signing, for the notification tests."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from channels.base import Person
from tests.support.processes import free_port

WEBHOOK_SECRET = "test-webhook-secret"
SLACK_SIGNING_SECRET = "test-slack-signing-secret"


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float = field(default_factory=time.time)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records every POST; `hold` keeps the answer back until released (to kill a sender mid-send);
    `answer` writes the body of the reply (Slack's Web API answers JSON), "ok" by default."""

    port: int = field(default_factory=free_port)
    deliveries: list[Delivery] = field(default_factory=list)
    hold: threading.Event | None = None
    answer: Callable[[Delivery], bytes] | None = None
    arrived: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                delivery = Delivery(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                receiver.deliveries.append(delivery)
                receiver.arrived.set()
                if receiver.hold is not None:
                    receiver.hold.wait(60)
                reply = b"ok" if receiver.answer is None else receiver.answer(delivery)
                self.send_response(200)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        server.allow_reuse_address = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    async def count(self, at_least: int, path: str | None = None) -> list[Delivery]:
        """For `eventually`: the deliveries (to `path`), once there are at least `at_least`."""
        found = [d for d in self.deliveries if path is None or d.path == path]
        return found if len(found) >= at_least else []

    def at(self, path: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.path == path]


@dataclass(frozen=True)
class CardReach:
    """A Reach (channels/base.py) for a channel that posts one message: the card link and no people."""

    card_link: str

    async def people(self, entries: Sequence[str]) -> list[Person]:
        raise AssertionError("this channel writes to no one by name")

    def decision_link(self, person: Person) -> str:
        return self.card_link

    async def once(self, part: str, send: Callable[[], Awaitable[None]]) -> bool:
        await send()
        return True


def verify_webhook(delivery: Delivery, secret: str, tolerance: float = 300.0) -> bool:
    """What a receiver does: recompute HMAC-SHA256 over `TIMESTAMP.BODY`, compare, check the age."""
    fields = dict(part.split("=", 1) for part in delivery.headers["x-approvals-signature"].split(","))
    timestamp = fields["t"]
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + delivery.body, hashlib.sha256).hexdigest()
    fresh = abs(time.time() - int(timestamp)) <= tolerance
    return fresh and hmac.compare_digest(expected, fields["v1"])


def write_policy(path: Path, body: str) -> str:
    path.write_text(body)
    return str(path)


def slack_form(user: str, action: str, request_id: str, response_url: str) -> bytes:
    """The form body Slack posts when someone presses a button (block_actions)."""
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "actions": [{"action_id": action, "value": request_id, "type": "button"}],
        "response_url": response_url,
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def slack_headers(body: bytes, secret: str = SLACK_SIGNING_SECRET, at: float | None = None) -> dict[str, str]:
    """Slack's v0 signature: HMAC-SHA256 of `v0:TIMESTAMP:BODY`, with its timestamp."""
    timestamp = str(int(at if at is not None else time.time()))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
