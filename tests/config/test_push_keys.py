"""The VAPID keys: made once and kept in the data directory for its owner only, the same for
every process that shares it (even when they start together), or VAPID_PRIVATE_KEY's; a bad key or
subject is one line."""

from __future__ import annotations

import base64
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from config.push_keys import KEY_FILE, push_keys
from config.settings import ConfigError, Settings


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_key_is_made_once_for_its_owner_only_and_kept(tmp_path: Path) -> None:
    settings = Settings(approvals_db=tmp_path / "data" / "approvals.db")
    first = settings.push_keys()
    kept = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert settings.push_keys() == first
    assert len(base64.urlsafe_b64decode(first.public_key + "=")) == 65  # an uncompressed P-256 point
    assert first.subject == "mailto:approvals@localhost"


def test_processes_starting_together_all_get_the_one_key(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        made = list(pool.map(lambda _: push_keys(None, None, tmp_path), range(16)))
    assert len({keys.public_key for keys in made}) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]  # no half-written file left behind


@pytest.mark.parametrize("form", ["raw", "pem", "der"])
def test_vapid_private_key_wins_in_any_of_its_forms(tmp_path: Path, form: str) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    text = {
        "raw": b64url(key.private_numbers().private_value.to_bytes(32, "big")),
        "pem": key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode(),
        "der": b64url(
            key.private_bytes(
                serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        ),
    }[form]
    settings = Settings(
        approvals_db=tmp_path / "approvals.db", vapid_private_key=text, vapid_subject="https://ops.example"
    )
    keys = settings.push_keys()
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    assert (keys.public_key, keys.subject) == (b64url(point), "https://ops.example")
    assert not (tmp_path / KEY_FILE).exists()


@pytest.mark.parametrize(
    ("private_key", "subject", "says"),
    [
        ("not a key", None, "VAPID_PRIVATE_KEY is not a P-256 private key"),
        (b64url(b"\x01" * 31), None, "VAPID_PRIVATE_KEY is not a P-256 private key"),
        (None, "ops@example.com", "VAPID_SUBJECT must be a mailto: or https: address"),
    ],
)
def test_a_bad_key_or_subject_is_one_line(
    tmp_path: Path, private_key: str | None, subject: str | None, says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        push_keys(private_key, subject, tmp_path)
    assert str(refused.value).startswith(says) and "\n" not in str(refused.value)


def test_a_damaged_key_file_is_named_not_replaced(tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text("damaged")
    with pytest.raises(ConfigError, match=r"vapid-private\.key is not a P-256 private key: remove it"):
        push_keys(None, None, tmp_path)
    assert (tmp_path / KEY_FILE).read_text() == "damaged"
