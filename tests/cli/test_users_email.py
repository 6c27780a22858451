"""`starter.py users`: a person's email (where email channels reach them) is set at `add` or later,
cleared, listed, and refused in one line when it is not an address or the person does not exist."""

from __future__ import annotations

import json

from temporalio.client import Client

from config.settings import Settings
from tests.support.helpers import rows
from tests.support.processes import run_cli
from tests.support.stack import one_line


async def test_a_persons_email_is_set_changed_cleared_and_listed(client: Client, settings: Settings) -> None:
    added = await run_cli(settings, client, "users", "add", "alice", "--email", "alice@example.com")
    assert added.returncode == 0, added.stderr
    bad = await run_cli(settings, client, "users", "add", "bob", "--email", "bob@@example.com")
    assert bad.returncode == 2 and "'bob@@example.com' is not an email address" in one_line(bad.stderr)
    assert (await run_cli(settings, client, "users", "add", "bob")).returncode == 0  # no email yet
    changed = await run_cli(settings, client, "users", "email", "bob", "bob@example.com")
    assert changed.returncode == 0 and changed.stdout.strip() == "bob: bob@example.com"
    unknown = await run_cli(settings, client, "users", "email", "carol", "carol@example.com")
    assert unknown.returncode == 3 and "no person 'carol'" in one_line(unknown.stderr)
    cleared = await run_cli(settings, client, "users", "email", "alice", "--clear")
    assert cleared.returncode == 0, cleared.stderr

    listed = await run_cli(settings, client, "users", "list", "--json")
    assert [(u["name"], u["email"]) for u in json.loads(listed.stdout)] == [("alice", None), ("bob", "bob@example.com")]
    stored = rows(settings.approvals_db, "SELECT name, email FROM ui_users ORDER BY name")
    assert stored == [{"name": "alice", "email": None}, {"name": "bob", "email": "bob@example.com"}]
    table = (await run_cli(settings, client, "users", "list")).stdout.splitlines()
    assert table[0].split() == ["NAME", "GROUPS", "ROLE", "EMAIL", "ADDED"] and "bob@example.com" in table[2]
