"""Cedar policies beside the TOML rules: `forbid` acts as a deny rule, `permit` as an allow rule.

`[cedar] policies = "rules.cedar"` in POLICY_FILE: its text travels with the rules (PolicyRules.
cedar_policies), so a replay evaluates the same policies. Each call is one Cedar request: the
principal is the agent (`Agent::"<who started the conversation, or the conversation>"`), the
action is the tool (`Action::"run_shell"`), the resource the call (`Call::"<call id>"`), and the
context its arguments (with `main`, the argument the TOML rules match). A matching `forbid` denies,
whatever else says (deny wins over everything); a matching `permit` allows where the TOML rules
would ask only because nothing matched. A policy that fails to evaluate for a call (a missing
attribute) matches nothing, as Cedar has it, so the call is judged by the TOML rules: asked, at
least. Pure: cedarpy evaluates in memory.
"""

from __future__ import annotations

from typing import Any, Literal

import cedarpy

CedarVerdict = Literal["allow", "deny"]


class InvalidCedar(ValueError):
    """The policy text does not parse as Cedar."""


def checked_policies(text: str) -> str:
    """The text, if Cedar parses it (InvalidCedar with the parser's first complaint if not)."""
    result = cedarpy.is_authorized(
        {"principal": 'Agent::"check"', "action": 'Action::"check"', "resource": 'Call::"check"', "context": {}},
        text,
        [],
    )
    parse_errors = [str(error) for error in result.diagnostics.errors if "parse" in str(error).lower()]
    if parse_errors:
        raise InvalidCedar(parse_errors[0].splitlines()[0])
    return text


def _cedar_value(value: Any) -> Any:
    """Arguments as Cedar values: strings, whole numbers, booleans, sets and records; anything else
    (a fraction, a null) as its text."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, list):
        return [_cedar_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _cedar_value(item) for key, item in value.items() if item is not None}
    return str(value)


def cedar_verdict(
    policies: str, principal: str, tool_name: str, call_id: str, arguments: dict[str, Any], main_argument: str
) -> CedarVerdict | None:
    """`deny` when a forbid matches, `allow` when a permit matches and no forbid does, else None."""
    request = {
        "principal": {"type": "Agent", "id": principal},
        "action": {"type": "Action", "id": tool_name},
        "resource": {"type": "Call", "id": call_id},
        "context": {**_cedar_value(arguments), "main": main_argument},
    }
    result = cedarpy.is_authorized(request, policies, [])
    if result.decision == cedarpy.Decision.Allow:
        return "allow"
    return "deny" if result.diagnostics.reasons else None
