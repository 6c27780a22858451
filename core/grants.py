"""Grants: a person's standing "allow calls like this", with a scope and a lifetime, revocable.

A grant is one rule pattern in the policy's own syntax (`run_shell(git status*)`,
`write_file(docs/**)`, `mcp__git__git_*`), covering one conversation (and its subagents) or every
conversation, until it expires or is revoked. It sits under the rules: it is consulted only for a
call the rules would bring to a person and no approver rule or M-of-N covers, so it can never allow
what a deny rule covers; and it covers a call only as an allow rule would (every part of a compound
shell command must match). Pure: matching reuses the policy's own evaluation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from core.policy import evaluate, validate_rules
from core.policy_rules import PolicyRules
from core.prescreen_verdict import PrescreenVerdict
from core.tool_model import ToolDef
from core.wire_model import WireModel

GrantScope = Literal["conversation", "everywhere"]


class Grant(WireModel):
    grant_id: str
    pattern: str
    scope: GrantScope
    conversation_id: str | None = Field(default=None, description="the top conversation, for scope conversation")
    made_by: str
    door: str = Field(description="where it was made: cli, ui, or always (an `approve --always`)")
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    from_request: str | None = Field(default=None, description="the request whose approval made it")

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


def checked_pattern(pattern: str) -> str:
    """The pattern, if the policy's syntax accepts it (ValueError with the policy's message if not)."""
    validate_rules(PolicyRules(allow=[pattern]))
    return pattern.strip()


def pattern_covers(pattern: str, tool: str | ToolDef, main_argument: str) -> bool:
    """Whether the pattern, as the only allow rule, allows the call."""
    return evaluate(PolicyRules(allow=[pattern], ask=[], deny=[]), tool, main_argument) == "allow"


def covering_grant(
    grants: list[Grant], tool: str | ToolDef, main_argument: str, conversation_ids: set[str], now: datetime
) -> Grant | None:
    """The oldest active grant in scope (the call's conversation or one above it) that covers the call."""
    for grant in sorted(grants, key=lambda g: g.created_at):
        in_scope = grant.scope == "everywhere" or grant.conversation_id in conversation_ids
        if in_scope and grant.active(now) and pattern_covers(grant.pattern, tool, main_argument):
            return grant
    return None


class ForgetAlwaysAllow(WireModel):
    """SIGNAL_FORGET_ALWAYS_ALLOW's payload."""

    tool_name: str


class JudgeInput(WireModel):
    """A call the rules would bring to a person, before it is: may a grant decide it?"""

    conversation_id: str
    request_id: str
    tool_name: str
    tool: ToolDef | None = Field(default=None, description="its definition; None: a built-in")
    main_argument: str
    approvers: list[str] | None = Field(default=None, description="who may approve it (approver rules); None: anyone")
    not_by: str | None = Field(default=None, description="who may not (the starter, under a not-the-starter rule)")
    arguments: dict[str, Any] = Field(default_factory=dict, description="the exact arguments (for the pre-screen)")
    last_user_message: str | None = None
    prescreen_denials: int = Field(default=0, description="calls of this conversation the pre-screen denied")
    prescreen_allowed: bool = Field(default=False, description="no approver rule holds: the pre-screen may answer")


class JudgeVerdict(WireModel):
    """`allow` with the grant that covers the call or the pre-screen's verdict, `deny` by the
    pre-screen, or `ask`: a person decides (with the pre-screen's verdict, when it was asked)."""

    verdict: Literal["allow", "ask", "deny"]
    grant: Grant | None = None
    prescreen: PrescreenVerdict | None = None
    groups: list[str] = Field(default_factory=list, description="the maker's groups, as the read model knows them")
