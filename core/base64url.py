"""Unpadded base64url, as tokens, JWTs and Web Push keys write it."""

from __future__ import annotations

import base64


def encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decode(text: str) -> bytes:
    """The bytes of `text`, its padding restored; ValueError when it is not base64url."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
