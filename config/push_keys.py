"""The VAPID key pair Web Push is signed with (RFC 8292): VAPID_PRIVATE_KEY, or a P-256 key
generated once and kept in the data directory (readable by its owner only), so every process of
one deployment that shares the directory signs with the key the browsers subscribed with, and a
restart does not orphan their subscriptions.

A browser subscribes with the public key (`GET /api/push/key`); a push service accepts a push only
when it is signed by the matching private key.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from config.errors import ConfigError
from config.kept_secret import kept_secret
from core import base64url as b64url
from core.push_subscription import VapidKeys

KEY_FILE = "vapid-private.key"
# Push services want a way to reach the sender; Apple's refuses a `localhost` one (set VAPID_SUBJECT).
DEFAULT_SUBJECT = "mailto:approvals@localhost"


def push_keys(private_key: str | None, subject: str | None, data_dir: Path) -> VapidKeys:
    key = _parsed(private_key) if private_key else _kept_key(data_dir)
    contact = (subject or DEFAULT_SUBJECT).strip()
    if not contact.startswith(("mailto:", "https://")):
        raise ConfigError(f"VAPID_SUBJECT must be a mailto: or https: address, not {contact!r}")
    return VapidKeys(_raw_private(key), _raw_public(key), contact)


def _parsed(text: str) -> ec.EllipticCurvePrivateKey:
    """A raw base64url scalar (as `web-push generate-vapid-keys` prints it), or a PEM or DER key."""
    cleaned = text.strip()
    try:
        if cleaned.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(cleaned.encode(), password=None)
        else:
            data = b64url.decode(cleaned)
            key = (
                ec.derive_private_key(int.from_bytes(data, "big"), ec.SECP256R1())
                if len(data) == 32
                else serialization.load_der_private_key(data, password=None)
            )
    except (ValueError, TypeError):
        raise ConfigError("VAPID_PRIVATE_KEY is not a P-256 private key (base64url, DER or PEM)") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ConfigError("VAPID_PRIVATE_KEY is not a P-256 private key (base64url, DER or PEM)")
    return key


def _kept_key(data_dir: Path) -> ec.EllipticCurvePrivateKey:
    text = kept_secret(data_dir, KEY_FILE, lambda: _raw_private(ec.generate_private_key(ec.SECP256R1())))
    try:
        return _parsed(text)
    except ConfigError:
        path = data_dir / KEY_FILE
        raise ConfigError(f"{path} is not a P-256 private key: remove it to have a new one made") from None


def _raw_private(key: ec.EllipticCurvePrivateKey) -> str:
    return b64url.encode(key.private_numbers().private_value.to_bytes(32, "big"))


def _raw_public(key: ec.EllipticCurvePrivateKey) -> str:
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return b64url.encode(point)
