"""judge_call: before a call is brought to a person, may a person's standing grant, or the
pre-screen, decide it?

The workflow asks this only for a call its rules would bring to a person and that needs no more
than one approver (deny rules and M-of-N outrank every grant). The grants live in the read model
(`starter.py grants`, `/api/grants`): one that is active now, in scope (the call's conversation or
the one above it, or everywhere) and whose pattern covers the call as an allow rule would, decides
it, if its maker may approve the call under the approver rules. Else the pre-screen, when
`[prescreen]` is configured, answers for the calls its patterns cover (activities/prescreen.py;
any failure of it is an `ask`). The answer is an activity result,
so a replay decides the same, and a grant revoked or expired before this read approves nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from temporalio import activity

from activities.prescreen import ask_prescreen, covers
from config.errors import ConfigError
from config.prescreen_section import PrescreenConfig
from core.approvers import may_decide
from core.grants import JudgeInput, JudgeVerdict, covering_grant
from core.tool_model import ToolDef
from core.tool_specs import TOOL_SPECS
from storage.store import ProjectionStore
from workflows.activity_calls import JUDGE_CALL


class JudgeActivities:
    def __init__(
        self, projection: ProjectionStore, prescreen: Callable[[], PrescreenConfig | None] = lambda: None
    ) -> None:
        self._projection = projection
        self._prescreen = prescreen  # `[prescreen]` of POLICY_FILE as it is now (None: off)

    @activity.defn(name=JUDGE_CALL)
    async def judge_call(self, request: JudgeInput) -> JudgeVerdict:
        top = await self._projection.top_conversation(request.conversation_id)
        scope = {request.conversation_id, top}
        grants = await self._projection.grants_in_scope(sorted(scope))
        # An `approve --always` grant is its conversation's own, as always-allow was: no subagent's.
        grants = [g for g in grants if g.door != "always" or g.conversation_id == request.conversation_id]
        tool = request.tool or TOOL_SPECS.get(request.tool_name) or request.tool_name
        now = datetime.now(UTC)
        while grants:
            grant = covering_grant(grants, tool, request.main_argument, scope, now)
            if grant is None:
                break
            groups = await self._projection.groups_of(grant.made_by)
            if may_decide(request.approvers, grant.made_by, groups, request.not_by):
                activity.logger.info("%s decided by grant %s (%s)", request.request_id, grant.grant_id, grant.pattern)
                return JudgeVerdict(verdict="allow", grant=grant, groups=groups)
            grants = [other for other in grants if other.grant_id != grant.grant_id]
        return await self._screened(request, tool)

    async def _screened(self, request: JudgeInput, tool: str | ToolDef) -> JudgeVerdict:
        """The pre-screen's verdict, where it may answer: no approver rule holds, one of its patterns
        covers the call, and it has not yet denied `deny_limit` calls of this conversation."""
        try:
            config = self._prescreen() if request.prescreen_allowed else None
        except ConfigError as err:  # a broken [prescreen] must not keep the call from a person
            activity.logger.error("pre-screen not asked for %s: %s", request.request_id, err)
            return JudgeVerdict(verdict="ask")
        if config is None or request.prescreen_denials >= config.deny_limit:
            return JudgeVerdict(verdict="ask")
        if not covers(config, tool, request.main_argument):
            return JudgeVerdict(verdict="ask")
        activity.heartbeat()
        said = await ask_prescreen(config, request.tool_name, request.arguments, request.last_user_message)
        activity.logger.info(
            "pre-screen of %s: %s (%s)%s",
            request.request_id,
            said.verdict,
            said.reason,
            f"; {said.error}" if said.error else "",
        )
        return JudgeVerdict(verdict=said.verdict, prescreen=said)
