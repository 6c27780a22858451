"""Values a person supplies for a call (`supplied_by_approver`), sealed by the door that took them and
opened only by the tool's activity, right before the tool runs.

AES-GCM under a key every door and worker of a deployment shares: SUPPLIED_SECRET_KEY (any text,
hashed to a key), else a key generated once and kept in the data directory (readable by its
owner only). The associated data is the request id and the argument's name, so a sealed value opens
for no other request and no other argument: a decision copied from one call's history to another
runs nothing. What travels between door and tool (the decision, the workflow's history, the
decision claim, the tool's activity input) is the sealed text alone.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from pathlib import Path

from config.kept_secret import kept_secret

KEY_FILE = "supplied-secret.key"
SEALED_PREFIX = "sealed1:"
_NONCE_BYTES = 12


class BadSeal(ValueError):
    """A sealed value that does not open here: its message says which argument, never the text."""


def supplied_secret_key(secret: str | None, data_dir: Path) -> bytes:
    """The 32-byte key: the configured secret's SHA-256, or the data directory's key file."""
    if secret:
        return hashlib.sha256(secret.encode()).digest()
    return bytes.fromhex(kept_secret(data_dir, KEY_FILE, lambda: secrets.token_bytes(32).hex()))


def _associated(request_id: str, name: str) -> bytes:
    return f"{request_id}\x00{name}".encode()


def seal(key: bytes, request_id: str, name: str, value: str) -> str:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # loaded by the doors and tools that seal

    nonce = secrets.token_bytes(_NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, value.encode(), _associated(request_id, name))
    return SEALED_PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()


def unseal(key: bytes, request_id: str, name: str, sealed: str) -> str:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not sealed.startswith(SEALED_PREFIX):
        raise BadSeal(f"the value supplied for {name} is not sealed")
    try:
        raw = base64.urlsafe_b64decode(sealed[len(SEALED_PREFIX) :].encode())
        opened = AESGCM(key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _associated(request_id, name))
    except (InvalidTag, ValueError):
        raise BadSeal(
            f"the value supplied for {name} does not open here: sealed for another request or argument, or"
            " with another SUPPLIED_SECRET_KEY"
        ) from None
    return opened.decode()


def seal_all(key: bytes, request_id: str, values: dict[str, str]) -> dict[str, str]:
    return {name: seal(key, request_id, name, value) for name, value in values.items()}


def unseal_all(key: bytes, request_id: str, sealed: dict[str, str]) -> dict[str, str]:
    return {name: unseal(key, request_id, name, text) for name, text in sealed.items()}
