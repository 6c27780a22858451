"""Approvers: people with a personal token and groups, and whom a login session belongs to. All
user SQL is here.

A token is `apr-ID-SECRET`; the store keeps the ID, a random salt and the SHA-256 of salt and
secret, never the token, so a copy of the database cannot be used to log in. The secret is 192
random bits, so one salted hash (rather than a slow password hash) is enough.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from storage.backend import Tx
from storage.writes import now_iso

TOKEN_PREFIX = "apr"
ASKER_ROLE = "asker"


@dataclass(frozen=True)
class Principal:
    name: str
    groups: list[str]


@dataclass(frozen=True)
class Contact:
    name: str
    groups: list[str]
    email: str | None


class UserExists(Exception):
    pass


def _hash(salt: str, secret: str) -> str:
    return hashlib.sha256(f"{salt}:{secret}".encode()).hexdigest()


async def add_user(tx: Tx, name: str, groups: list[str], asker: bool = False, email: str | None = None) -> str:
    """Record a person (or, with asker, a caller that may only ask) and return their token: the
    only time it exists outside their hands. `email`: where mail channels reach them."""
    token_id, secret, salt = secrets.token_hex(6), secrets.token_hex(24), secrets.token_hex(16)
    added = await tx.execute(
        "INSERT INTO ui_users (name, token_id, groups_json, salt, token_hash, created_at, role, email)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (
            name,
            token_id,
            json.dumps(sorted(set(groups))),
            salt,
            _hash(salt, secret),
            now_iso(),
            ASKER_ROLE if asker else None,
            email,
        ),
    )
    if not added:
        raise UserExists(f"there is already a user {name!r} (remove it first to issue a new token)")
    return f"{TOKEN_PREFIX}-{token_id}-{secret}"


async def remove_user(tx: Tx, name: str) -> bool:
    return await tx.execute("DELETE FROM ui_users WHERE name = ?", (name,)) > 0


async def list_users(tx: Tx) -> list[dict[str, Any]]:
    found = await tx.fetchall("SELECT name, groups_json, created_at, role, email FROM ui_users ORDER BY name")
    return [
        {
            "name": r["name"],
            "groups": json.loads(r["groups_json"]),
            "created_at": r["created_at"],
            "asker": r["role"] == ASKER_ROLE,
            "email": r["email"],
        }
        for r in found
    ]


async def set_email(tx: Tx, name: str, email: str | None) -> bool:
    """A person's email (None: none); False when there is no such person."""
    return (await tx.execute("UPDATE ui_users SET email = ? WHERE name = ? AND role IS NULL", (email, name))) > 0


async def contacts(tx: Tx) -> list[Contact]:
    """Every person (not an asker) with their groups and email, for the channels that write to them."""
    found = await tx.fetchall("SELECT name, groups_json, email FROM ui_users WHERE role IS NULL ORDER BY name")
    return [Contact(r["name"], list(json.loads(r["groups_json"])), r["email"] or None) for r in found]


async def groups_of(tx: Tx, name: str) -> list[str]:
    row = await tx.fetchone("SELECT groups_json FROM ui_users WHERE name = ?", (name,))
    return list(json.loads(row["groups_json"])) if row is not None else []


async def _token_owner(tx: Tx, token: str) -> Any:
    """The user row a token is the token of, or None."""
    prefix, _, rest = token.partition("-")
    token_id, _, secret = rest.partition("-")
    if prefix != TOKEN_PREFIX or not token_id or not secret or len(token) > 200:
        return None
    row = await tx.fetchone(
        "SELECT name, groups_json, salt, token_hash, role FROM ui_users WHERE token_id = ?", (token_id,)
    )
    if row is None or not hmac.compare_digest(_hash(row["salt"], secret), row["token_hash"]):
        return None
    return row


async def verify_token(tx: Tx, token: str) -> Principal | None:
    """The person a token belongs to, or None for anything else (an asking token included)."""
    row = await _token_owner(tx, token)
    if row is None or row["role"] == ASKER_ROLE:
        return None
    return Principal(row["name"], list(json.loads(row["groups_json"])))


async def verify_asker(tx: Tx, token: str) -> str | None:
    """The name of the asker an asking token belongs to, or None for anything else."""
    row = await _token_owner(tx, token)
    return str(row["name"]) if row is not None and row["role"] == ASKER_ROLE else None


async def bind_session(tx: Tx, session_hash: str, name: str) -> None:
    """The person a login session belongs to (the session itself is in storage/sessions.py)."""
    await tx.send("DELETE FROM ui_session_people WHERE session_hash = ?", (session_hash,))
    await tx.send("INSERT INTO ui_session_people (session_hash, name) VALUES (?, ?)", (session_hash, name))


async def session_person(tx: Tx, session_hash: str) -> Principal | None:
    """The person of a session, with their current groups; None once they were removed."""
    row = await tx.fetchone(
        "SELECT u.name, u.groups_json FROM ui_session_people p JOIN ui_users u ON u.name = p.name"
        " WHERE p.session_hash = ? AND u.role IS NULL",
        (session_hash,),
    )
    return None if row is None else Principal(row["name"], list(json.loads(row["groups_json"])))
