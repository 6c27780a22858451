"""A Python tool module for the supplied-argument tests: `deploy(service, token)` keeps what it got in
`RECEIVED` (this process's memory) and answers without the token, as a careful tool does."""

from __future__ import annotations

from approvals_tools import tool

RECEIVED: list[dict[str, str]] = []


@tool(permission="write", rule_argument="service")
def deploy(service: str, token: str) -> str:
    """Deploy a service with a token only a person holds.

    Args:
        service: the service to deploy
        token: the deploy token
    """
    RECEIVED.append({"service": service, "token": token})
    return f"deployed {service}"
