"""Grants in the projection, on both backends: stored and read back whole, listed active or all,
revoked once (a second revoke changes nothing), found in a conversation's scope, and a subagent's
top conversation found by following its parents."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.grants import Grant
from core.projection_model import ConversationProjection
from storage.store import ProjectionStore
from tests.support.helpers import Db
from tests.support.postgres import on_both_backends

pytestmark = on_both_backends
NOW = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)


def grant(grant_id: str, pattern: str = "run_shell(git status*)", **fields: object) -> Grant:
    values: dict[str, object] = {
        "grant_id": grant_id,
        "pattern": pattern,
        "scope": "conversation",
        "conversation_id": "top",
        "made_by": "ann",
        "door": "cli",
        "created_at": NOW,
        **fields,
    }
    return Grant.model_validate(values)


def conversation(cid: str, parent: str | None = None) -> ConversationProjection:
    return ConversationProjection(
        conversation_id=cid, turn_status="running", pending_count=0, updated_at=NOW, version=1, parent_id=parent
    )


async def test_a_grant_is_stored_whole_and_listed_while_active(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        forever = grant("gr_forever", from_request="perm_top_c1")
        hour = grant("gr_hour", "write_file(docs/**)", scope="everywhere", conversation_id=None,
                     created_at=NOW + timedelta(seconds=1), expires_at=NOW + timedelta(hours=1))  # fmt: skip
        for made in (hour, forever):
            await store.add_grant(made)
        assert await store.grant("gr_forever") == forever
        assert await store.grant("gr_hour") == hour
        assert await store.grant("gr_none") is None
        assert await store.grants(now=NOW + timedelta(minutes=59)) == [forever, hour]
        assert await store.grants(now=NOW + timedelta(hours=1)) == [forever], "expired at its expiry"
        assert await store.grants(include_ended=True, now=NOW + timedelta(days=9)) == [forever, hour]
        assert [g.grant_id for g in await store.grants()] == ["gr_forever"], "now, by default"
    finally:
        await store.close()


async def test_a_revoke_ends_it_once_and_an_unknown_one_is_none(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        await store.add_grant(grant("gr_a"))
        revoked = await store.revoke_grant("gr_a", "bob", NOW + timedelta(minutes=5))
        assert revoked is not None and (revoked.revoked_by, revoked.revoked_at) == ("bob", NOW + timedelta(minutes=5))
        again = await store.revoke_grant("gr_a", "carl", NOW + timedelta(minutes=9))
        assert again == revoked, "the first revocation stands"
        assert await store.revoke_grant("gr_unknown", "bob", NOW) is None
        assert await store.grants(now=NOW) == []
        assert [g.grant_id for g in await store.grants(include_ended=True, now=NOW)] == ["gr_a"]
        assert await store.grants_in_scope(["top"]) == []
    finally:
        await store.close()


async def test_the_scope_holds_everywhere_and_the_named_conversations_revoked_ones_left_out(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        made = [
            grant("gr_top"),
            grant("gr_other", conversation_id="other", created_at=NOW + timedelta(seconds=1)),
            grant("gr_all", scope="everywhere", conversation_id=None, created_at=NOW + timedelta(seconds=2)),
            grant("gr_gone", created_at=NOW + timedelta(seconds=3), expires_at=NOW),  # expired: the caller judges
            grant("gr_revoked", created_at=NOW + timedelta(seconds=4)),
        ]
        for each in made:
            await store.add_grant(each)
        await store.revoke_grant("gr_revoked", "ann", NOW)
        in_top = await store.grants_in_scope(["child", "top", "top"])
        assert [g.grant_id for g in in_top] == ["gr_top", "gr_all", "gr_gone"]
        assert [g.grant_id for g in await store.grants_in_scope([])] == ["gr_all"]
        assert [g.grant_id for g in await store.grants_in_scope(["other"])] == ["gr_other", "gr_all"]
    finally:
        await store.close()


async def test_a_subagent_follows_its_parents_to_the_top(database: Db) -> None:
    store = ProjectionStore(database)
    try:
        for conv in (conversation("top"), conversation("child", "top"), conversation("grandchild", "child")):
            await store.project_conversation(conv)
        assert await store.top_conversation("grandchild") == "top"
        assert await store.top_conversation("child") == "top"
        assert await store.top_conversation("top") == "top"
        assert await store.top_conversation("unknown") == "unknown"
        await store.project_conversation(conversation("loop-a", "loop-b"))
        await store.project_conversation(conversation("loop-b", "loop-a"))
        assert await store.top_conversation("loop-a") in ("loop-a", "loop-b"), "a cycle ends"
    finally:
        await store.close()
