"""Tool definitions: what the model is offered, what the rules match, and who runs it."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import Field

from core.wire_model import WireModel

PermissionType = Literal["read", "write", "execute", "network", "state"]
ToolSource = Literal["builtin", "python", "mcp", "subagent", "external"]


class ToolDef(WireModel):
    """One tool, defined once: what the model sees, what the rules match, and who runs it."""

    name: str = Field(description="the name the model and the rules use (mcp__SERVER__TOOL for MCP tools)")
    description: str
    parameters: dict[str, Any] = Field(description="JSON schema of the arguments (an object schema)")
    permission_type: PermissionType
    rule_argument: str | None = Field(
        default=None, description="the argument rules glob over; None: the canonical JSON of all arguments"
    )
    splitter: Literal["none", "shell"] = Field(
        default="none", description="how the rule argument splits into parts every allow must cover"
    )
    path_arguments: list[str] = Field(default_factory=list, description="arguments confined to the workspace")
    source: ToolSource = "builtin"
    origin: str = Field(default="builtin", description="the Python module or MCP server that provides it")
    remote_name: str | None = Field(default=None, description="the name its module or server knows it by")
    annotations: dict[str, Any] = Field(default_factory=dict, description="hints a server gave (readOnlyHint, ...)")
    at_most_once: bool = Field(default=False, description="guarded by the execution ledger: never run twice")
    supplied_by_approver: list[str] = Field(
        default_factory=list,
        description="arguments a person supplies when approving a call (a secret): never offered to the model",
    )

    def definition_hash(self) -> str:
        """What a person's always-allow binds to: a changed description or schema is a new tool."""
        canonical = json.dumps([self.name, self.description, self.parameters], sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def offered_parameters(self) -> dict[str, Any]:
        """The schema the model is offered and its calls are checked against: the tool's own,
        without the arguments a person supplies."""
        if not self.supplied_by_approver:
            return self.parameters
        held = set(self.supplied_by_approver)
        offered = dict(self.parameters)
        offered["properties"] = {k: v for k, v in (self.parameters.get("properties") or {}).items() if k not in held}
        if "required" in self.parameters:
            offered["required"] = [name for name in self.parameters["required"] if name not in held]
        return offered

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.offered_parameters()},
        }


class ToolCatalog(WireModel):
    """The tools one turn offers, as an activity listed them; recorded in history for replay."""

    tools: list[ToolDef]
    unavailable: dict[str, str] = Field(default_factory=dict, description="source that failed to list -> why")
    wrote_turn_start: bool = Field(default=False, description="the activity wrote the listing's turn_start")
