"""Approvers: people with a personal token and groups. All user SQL is here.

A token is `apr-ID-SECRET`; the file keeps the ID, a random salt and the SHA-256 of salt and
secret, never the token, so a copy of the file cannot be used to log in. The secret is 192 random
bits, so one salted hash (rather than a slow password hash) is enough.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from projection.db import Writer
from projection.reader import reading
from projection.writes import now_iso

TOKEN_PREFIX = "apr"


@dataclass(frozen=True)
class Principal:
    name: str
    groups: list[str]


class UserExists(Exception):
    pass


def _hash(salt: str, secret: str) -> str:
    return hashlib.sha256(f"{salt}:{secret}".encode()).hexdigest()


def add_user(db_path: Path, name: str, groups: list[str]) -> str:
    """Record a person and return their token: the only time it exists outside their hands."""
    token_id, secret, salt = secrets.token_hex(6), secrets.token_hex(24), secrets.token_hex(16)
    with Writer(db_path).transaction() as conn:
        try:
            conn.execute(
                "INSERT INTO ui_users (name, token_id, groups_json, salt, token_hash, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (name, token_id, json.dumps(sorted(set(groups))), salt, _hash(salt, secret), now_iso()),
            )
        except sqlite3.IntegrityError:
            raise UserExists(f"there is already a user {name!r} (remove it first to issue a new token)") from None
    return f"{TOKEN_PREFIX}-{token_id}-{secret}"


def remove_user(db_path: Path, name: str) -> bool:
    with Writer(db_path).transaction() as conn:
        return conn.execute("DELETE FROM ui_users WHERE name = ?", (name,)).rowcount > 0


def list_users(db_path: Path) -> list[dict[str, object]]:
    with reading(db_path) as conn:
        found = conn.execute("SELECT name, groups_json, created_at FROM ui_users ORDER BY name").fetchall()
    return [{"name": r["name"], "groups": json.loads(r["groups_json"]), "created_at": r["created_at"]} for r in found]


def groups_of(db_path: Path, name: str) -> list[str]:
    with reading(db_path) as conn:
        row = conn.execute("SELECT groups_json FROM ui_users WHERE name = ?", (name,)).fetchone()
    return list(json.loads(row["groups_json"])) if row is not None else []


def verify_token(db_path: Path, token: str) -> Principal | None:
    """The person a token belongs to, or None for anything else."""
    prefix, _, rest = token.partition("-")
    token_id, _, secret = rest.partition("-")
    if prefix != TOKEN_PREFIX or not token_id or not secret or len(token) > 200:
        return None
    with reading(db_path) as conn:
        row = conn.execute(
            "SELECT name, groups_json, salt, token_hash FROM ui_users WHERE token_id = ?", (token_id,)
        ).fetchone()
    if row is None or not hmac.compare_digest(_hash(row["salt"], secret), row["token_hash"]):
        return None
    return Principal(row["name"], list(json.loads(row["groups_json"])))


def bind_session(db_path: Path, session_hash: str, name: str) -> None:
    """The person a login session belongs to (the session itself is in projection/sessions.py)."""
    with Writer(db_path).transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO ui_session_people (session_hash, name) VALUES (?, ?)", (session_hash, name)
        )


def session_person(db_path: Path, session_hash: str) -> Principal | None:
    """The person of an open session, with their current groups; None once they were removed."""
    with reading(db_path) as conn:
        row = conn.execute(
            "SELECT u.name, u.groups_json FROM ui_session_people p JOIN ui_users u ON u.name = p.name"
            " WHERE p.session_hash = ?",
            (session_hash,),
        ).fetchone()
    return None if row is None else Principal(row["name"], list(json.loads(row["groups_json"])))
