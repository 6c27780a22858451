"""The deployment's rules for an ApprovalRequest, whose caller knows neither the policy file nor
the default deadline: read here (the policy file is parsed once per content, config/policy_file.py)."""

from __future__ import annotations

from temporalio import activity

from config.settings import Settings
from core.models import ServiceRules
from workflows.activity_calls import SERVICE_RULES


class ServiceRulesActivity:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    @activity.defn(name=SERVICE_RULES)
    async def service_rules(self) -> ServiceRules:
        return ServiceRules(
            policy=self._settings.load_policy(), approval_timeout_seconds=self._settings.approval_timeout
        )
