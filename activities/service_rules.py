"""The deployment's rules for an ApprovalRequest, whose caller knows neither the policy file nor
the default deadline: read here (the policy file is parsed once per content, config/policy_file.py).

With them, how an earlier run of the same request id was decided, from the read model: a caller
that runs again (a retry, a reset) starts its request again under the same id, and a decided
request must stay decided, never be asked twice."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from config.settings import Settings
from core.conversation_model import arguments_hash
from core.policy_rules import ServiceRules
from storage.store import ProjectionStore
from workflows.activity_calls import SERVICE_RULES


class ServiceRulesActivity:
    def __init__(self, settings: Settings, store: ProjectionStore) -> None:
        self._settings, self._store = settings, store

    @activity.defn(name=SERVICE_RULES)
    async def service_rules(self, request_id: str | None = None) -> ServiceRules:
        earlier = None if request_id is None else await self._earlier(request_id)
        return ServiceRules(
            policy=self._settings.load_policy(),
            approval_timeout_seconds=self._settings.approval_timeout,
            earlier=earlier,
        )

    async def _earlier(self, request_id: str) -> dict[str, Any] | None:
        row = await self._store.approval(request_id)
        if row is None or row["decision"] is None:
            return None
        arguments = row["edited_arguments"] if row["edited_arguments"] is not None else row["arguments"]
        finished = row["decision"] in ("expired", "canceled")
        return {
            "request_id": request_id,
            "decision": "allow" if row["decision"] == "always_allow" else row["decision"],
            "arguments": arguments,
            "args_hash": arguments_hash(arguments),
            "decided_by": row["decided_by"],
            "door": None if finished else row["decided_via"],
            "reason": row["reason"],
            "decided_at": row["resolved_at"],
        }
