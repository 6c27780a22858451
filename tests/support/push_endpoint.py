"""A push service on this machine, for the Web Push tests (the public ones are out of reach).

It plays both ends a real push reaches: the push service, which accepts a message only with a valid
VAPID `Authorization: vapid t=JWT,k=KEY` header (RFC 8292: an ES256 JWT signed by KEY, `aud` this
service's origin, `exp` in the future), and the browser, which decrypts the aes128gcm body (RFC
8291) with the subscription's private key. Each subscription it hands out has keys made here, like a
browser's; what arrives is recorded, verified or not, so a test asserts on outcomes.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from core.push_subscription import PushSubscription
from tests.support.processes import free_port


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class BrowserKeys:
    """What a browser makes when it subscribes: a P-256 key pair and a 16-byte auth secret."""

    private_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    @property
    def p256dh(self) -> str:
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64url(point)


@dataclass
class Push:
    """One message that arrived: whether its VAPID header verified (and why not), its claims and
    signing key, and its payload decrypted (None when it could not be)."""

    path: str
    headers: dict[str, str]
    vapid_problem: str | None
    claims: dict[str, Any]
    vapid_key: str
    payload: dict[str, Any] | None

    @property
    def verified(self) -> bool:
        return self.vapid_problem is None


@dataclass
class PushEndpoint:
    port: int = field(default_factory=free_port)
    pushes: list[Push] = field(default_factory=list)
    answers: dict[str, int] = field(default_factory=dict)  # path -> status (201 otherwise)
    _keys: dict[str, BrowserKeys] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def subscription(self, name: str) -> dict[str, Any]:
        """A new subscription at /push/NAME, as `PushSubscription.toJSON()` gives it."""
        keys = BrowserKeys()
        self._keys[f"/push/{name}"] = keys
        return {
            "endpoint": f"{self.origin}/push/{name}",
            "expirationTime": None,
            "keys": {"p256dh": keys.p256dh, "auth": b64url(keys.auth)},
        }

    def subscription_of(self, name: str, person: str) -> PushSubscription:
        """A new subscription at /push/NAME, as the inbox stores it for a person."""
        shape = self.subscription(name)
        return PushSubscription(shape["endpoint"], person, shape["keys"]["p256dh"], shape["keys"]["auth"])

    def start(self) -> PushEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                endpoint.pushes.append(endpoint.received(self.path, dict(self.headers.items()), body))
                self.send_response(endpoint.answers.get(self.path, 201))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    async def count(self, at_least: int) -> list[Push]:
        """For `eventually`: the pushes, once at least `at_least` arrived."""
        return list(self.pushes) if len(self.pushes) >= at_least else []

    def received(self, path: str, headers: dict[str, str], body: bytes) -> Push:
        lowered = {name.lower(): value for name, value in headers.items()}
        problem, claims, key = self.check_vapid(lowered.get("authorization", ""))
        return Push(path, lowered, problem, claims, key, self.decrypted(path, lowered, body))

    def check_vapid(self, authorization: str) -> tuple[str | None, dict[str, Any], str]:
        """(what is wrong with it or None, its claims, its key): what a push service checks."""
        scheme, _, rest = authorization.partition(" ")
        fields = dict(part.split("=", 1) for part in rest.split(",") if "=" in part)
        token, key = fields.get("t", ""), fields.get("k", "")
        if scheme.lower() != "vapid" or not token or not key:
            return "no vapid t=JWT,k=KEY header", {}, key
        try:
            head, claims_part, signature = token.split(".")
            header, claims = json.loads(unb64url(head)), json.loads(unb64url(claims_part))
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key))
            raw = unb64url(signature)
            der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            public.verify(der, f"{head}.{claims_part}".encode(), ec.ECDSA(hashes.SHA256()))
        except (ValueError, InvalidSignature) as err:
            return f"the JWT does not verify against k: {err!r}", {}, key
        if header.get("alg") != "ES256":
            return f"alg {header.get('alg')!r}, not ES256", claims, key
        if claims.get("aud") != self.origin:
            return f"aud {claims.get('aud')!r}, not {self.origin}", claims, key
        if not isinstance(claims.get("exp"), int) or not time.time() < claims["exp"] <= time.time() + 86400:
            return f"exp {claims.get('exp')!r} is not within the next 24 hours", claims, key
        if not str(claims.get("sub", "")).startswith(("mailto:", "https://")):
            return f"sub {claims.get('sub')!r} is no contact", claims, key
        return None, claims, key

    def decrypted(self, path: str, headers: dict[str, str], body: bytes) -> dict[str, Any] | None:
        keys = self._keys.get(path)
        if keys is None or headers.get("content-encoding") != "aes128gcm":
            return None
        try:
            plain = http_ece.decrypt(body, private_key=keys.private_key, auth_secret=keys.auth, version="aes128gcm")
            found: dict[str, Any] = json.loads(plain)
        except Exception:  # anything that does not decrypt is recorded as None
            return None
        return found
