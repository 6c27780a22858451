"""`grants add|list|revoke` from the command line, with no workflow: a bad pattern is exit 2, a
person the approver rules do not admit and an unknown grant or conversation exit 3; a conversation
grant is made for the top conversation, `--for` sets its expiry, a revoke ends it once and is kept."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cli.main import main
from config.settings import Settings
from core.projection_model import ConversationProjection
from storage.store import ProjectionStore
from tests.support.ui_fixtures import add_person

POLICY = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]

[[approvers]]
match = ["mcp__prod__*"]
approvers = ["group:sre", "alice"]
required = 2
"""


@pytest.fixture
def gated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    monkeypatch.setenv("APPROVALS_DB", str(tmp_path / "approvals.db"))
    monkeypatch.setenv("POLICY_FILE", str(policy))
    monkeypatch.delenv("APPROVER_TOKEN", raising=False)
    return Settings(approvals_db=tmp_path / "approvals.db", policy_file=str(policy), workspace_dir=tmp_path / "ws")


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    async def __call__(self, *argv: str) -> tuple[int, str, str]:
        """The CLI in-process (it runs its own event loop, so on a thread of its own)."""
        code = await asyncio.to_thread(main, list(argv))
        out = self.capsys.readouterr()
        return code, out.out, out.err


async def project(settings: Settings, *conversations: tuple[str, str | None]) -> None:
    store = ProjectionStore(settings.approvals_db)
    try:
        for cid, parent in conversations:
            conv = ConversationProjection(
                conversation_id=cid,
                turn_status="idle",
                pending_count=0,
                updated_at=datetime.now(UTC),
                version=1,
                parent_id=parent,
            )
            await store.project_conversation(conv)
    finally:
        await store.close()


async def test_grants_are_checked_made_listed_and_revoked(gated: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    cli = Cli(capsys)
    await add_person(gated, "sam", ["sre"])
    await project(gated, ("conv-top", None), ("conv-sub", "conv-top"))

    code, _, err = await cli("grants", "add", "run_shell(", "--everywhere", "--as", "olly")
    assert code == 2 and err.count("\n") == 1 and "not a grant pattern" in err
    code, _, err = await cli("grants", "add", "write_file(docs/**)", "--as", "olly")
    assert code == 2 and "one of the arguments --conversation --everywhere is required" in err
    code, _, err = await cli("grants", "add", "run_shell(git status*)", "--everywhere", "--as", "olly")
    assert code == 3 and "olly may not grant run_shell(git status*)" in err and "group:sre" in err
    code, _, err = await cli("grants", "add", "mcp__prod__deploy", "--everywhere", "--as", "sam")
    assert code == 3 and "need 2 approvers" in err
    code, _, err = await cli("grants", "add", "mcp__*", "--everywhere", "--as", "sam")
    assert code == 3, "a tool glob that reaches an M-of-N tool is refused too"
    code, _, err = await cli("grants", "add", "write_file(docs/**)", "--conversation", "conv-none", "--as", "olly")
    assert code == 3 and "no conversation conv-none" in err
    code, _, err = await cli("grants", "add", "write_file(docs/**)", "--everywhere", "--for", "0s", "--as", "olly")
    assert code == 2

    before = datetime.now(UTC)
    code, out, err = await cli(
        "grants", "add", "write_file(docs/**)", "--conversation", "conv-sub", "--for", "2h", "--as", "olly", "--json"
    )
    assert code == 0, err
    made = json.loads(out)
    docs = made["grant"]
    assert made["approved"] == []
    assert (docs["pattern"], docs["scope"], docs["conversation_id"]) == (
        "write_file(docs/**)",
        "conversation",
        "conv-top",
    )
    assert (docs["made_by"], docs["door"]) == ("olly", "cli") and docs["grant_id"].startswith("gr_")
    assert len(docs["grant_id"]) == len("gr_") + 10
    expires = datetime.fromisoformat(docs["expires_at"])
    assert before + timedelta(hours=2) <= expires <= datetime.now(UTC) + timedelta(hours=2)

    code, out, err = await cli("grants", "add", "run_shell(git status*)", "--everywhere", "--as", "sam")
    assert code == 0, err
    assert "Granted gr_" in out and "run_shell(git status*) everywhere, until revoked, by sam" in out
    assert "grants revoke gr_" in err

    code, out, _ = await cli("grants", "list", "--json")
    listed = json.loads(out)
    assert [(g["pattern"], g["status"]) for g in listed] == [
        ("write_file(docs/**)", "active"),
        ("run_shell(git status*)", "active"),
    ]
    git = listed[1]["grant_id"]
    code, out, _ = await cli("grants", "list")
    assert code == 0 and "conv-top" in out and "until revoked" in out and "run_shell(git status*)" in out

    code, out, err = await cli("grants", "revoke", git, "--as", "bob")
    assert code == 0, err
    assert f"Revoked {git} (run_shell(git status*)): by bob" in out
    code, out, _ = await cli("grants", "revoke", git, "--as", "carl", "--json")
    assert code == 0 and json.loads(out)["revoked_by"] == "bob", "a second revoke changes nothing"
    code, _, err = await cli("grants", "revoke", "gr_0000000000")
    assert code == 3 and "no grant gr_0000000000" in err

    code, out, _ = await cli("grants", "list", "--json")
    assert [g["pattern"] for g in json.loads(out)] == ["write_file(docs/**)"]
    code, out, _ = await cli("grants", "list", "--all", "--json")
    assert [(g["pattern"], g["status"]) for g in json.loads(out)] == [
        ("write_file(docs/**)", "active"),
        ("run_shell(git status*)", "revoked"),
    ]


async def test_approve_grant_options_need_a_grant_and_one_request(
    gated: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(capsys)
    code, _, err = await cli("approve", "perm_a", "--everywhere")
    assert code == 2 and "give --grant PATTERN too" in err
    code, _, err = await cli("approve", "perm_a", "perm_b", "--grant", "run_shell(echo *)")
    assert code == 2 and "exactly one REQUEST_ID" in err
    code, _, err = await cli("approve", "perm_a", "--grant", "run_shell(echo *)", "--always")
    assert code == 2
    code, _, err = await cli("approve", "perm_unknown", "--grant", "run_shell(echo *)")
    assert code == 3 and "perm_unknown" in err
