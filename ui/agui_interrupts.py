"""Our approval requests as AG-UI interrupts, and AG-UI resume entries as our decisions.

An interrupt's id is the request id, so a resume entry names the request it decides. Its
`responseSchema` asks for `{decision: allow|deny|edit, reason?, arguments?}` as the entry's
payload; the metadata carries the tool, the exact arguments and their hash, which a client may
send back as `metadata.argsHash` so that a decision on arguments it did not see is refused as
stale. A `cancelled` entry is a deny: the client abandoned the question, and the call must not run.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from core.conversation_model import ApprovalRecord, DecisionInput, arguments_hash

REASON_TOOL_APPROVAL = "tool_approval"
CANCELLED_REASON = "the AG-UI client cancelled the interrupt"
DECISIONS = ("allow", "deny", "edit")

RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": list(DECISIONS), "description": "run the call, refuse it, or edit it"},
        "reason": {"type": "string", "description": "why; a deny's reason is what the model is told"},
        "arguments": {"type": "object", "description": "for edit: the arguments the call runs with instead"},
    },
    "required": ["decision"],
    "additionalProperties": False,
}


class BadResume(ValueError):
    """A resume entry that cannot be a decision; the message names the entry and what is wrong."""


def interrupt_for(record: ApprovalRecord) -> Interrupt:
    return Interrupt(
        id=record.request_id,
        reason=REASON_TOOL_APPROVAL,
        message=f"{record.tool_name} asks for approval ({record.permission_type})",
        tool_call_id=record.tool_call_id,
        response_schema=RESPONSE_SCHEMA,
        expires_at=record.expires_at.isoformat(),
        metadata={
            "toolName": record.tool_name,
            "arguments": record.arguments,
            "argsHash": arguments_hash(record.arguments),
            "approvers": record.approvers,
            "required": record.required,
        },
    )


def decision_for(entry: ResumeEntry, who: dict[str, Any]) -> DecisionInput:
    """The decision a resume entry stands for, made by `who` (decided_by, principal, groups)."""
    rid = entry.interrupt_id
    meta = entry.metadata or {}
    args_hash = meta.get("argsHash")
    if args_hash is not None and not isinstance(args_hash, str):
        raise BadResume(f"resume entry {rid}: metadata.argsHash must be a string")
    common: dict[str, Any] = {"request_id": rid, "args_hash": args_hash, "door": "ui", **who}
    if entry.status == "cancelled":
        return DecisionInput(decision="deny", reason=CANCELLED_REASON, **common)
    payload = entry.payload
    if not isinstance(payload, dict):
        raise BadResume(f"resume entry {rid}: payload must be an object with a decision")
    unknown = sorted(set(payload) - set(RESPONSE_SCHEMA["properties"]))
    if unknown:
        raise BadResume(f"resume entry {rid}: unknown payload field(s) {', '.join(unknown)}")
    decision, reason, arguments = payload.get("decision"), payload.get("reason"), payload.get("arguments")
    if decision not in DECISIONS:
        raise BadResume(f"resume entry {rid}: decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
    if reason is not None and not isinstance(reason, str):
        raise BadResume(f"resume entry {rid}: reason must be a string")
    if decision == "edit" and not isinstance(arguments, dict):
        raise BadResume(f"resume entry {rid}: an edit needs its arguments as an object")
    if decision != "edit" and arguments is not None:
        raise BadResume(f"resume entry {rid}: arguments go with an edit only")
    return DecisionInput(decision=decision, reason=reason or None, arguments=arguments, **common)
