"""`mcp-permissions`: Claude Code's permission prompts as durable approval requests, over MCP (stdio).

Claude Code (and the Claude Agent SDK) hand each permission prompt to one MCP tool
(`--permission-prompt-tool mcp__approvals__approval_prompt`). Here that tool opens an ordinary
`ApprovalRequest` (doors/ask.py), so the prompt is judged by the service's rules, shows in the
inbox, the CLI and Slack, survives this process, and is answered from any door. The tool's id for
the call (`tool_use_id`) is the request's key: asking again for the same call finds the same
request, decided or not. stdout is the protocol: everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import uuid
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import ValidationError

from cli.errors import EXIT_OK, CliError
from cli.temporal import Session
from doors.ask import ask, outcome
from durable_approvals.types import ApprovalRequestInput, ApprovalResult, Requester

if TYPE_CHECKING:
    from temporalio.client import Client

log = logging.getLogger("approvals.mcp_permissions")

TOOL_NAME = "approval_prompt"
DEFAULT_AGENT = "claude-code"
AGENT_VARIABLE = "APPROVALS_AGENT"  # the session's name on the cards and in the audit
PROGRESS_VARIABLE = "APPROVALS_MCP_PROGRESS_SECONDS"  # how often a waiting call says it is alive
DEFAULT_PROGRESS_SECONDS = 10.0
DESCRIPTION = (
    "Claude Code's permission prompt: asks a person through the durable approvals service and "
    'answers {"behavior": "allow", "updatedInput": {...}} or {"behavior": "deny", "message": "..."}.'
)


def progress_seconds() -> float:
    """The interval between progress notifications; an unreadable value falls back to the default."""
    text = os.environ.get(PROGRESS_VARIABLE, "").strip()
    try:
        value = float(text) if text else DEFAULT_PROGRESS_SECONDS
    except ValueError:
        log.warning("%s=%r is not a number of seconds; using %g", PROGRESS_VARIABLE, text, DEFAULT_PROGRESS_SECONDS)
        return DEFAULT_PROGRESS_SECONDS
    return value if value > 0 else DEFAULT_PROGRESS_SECONDS


def agent_name() -> str:
    return os.environ.get(AGENT_VARIABLE, "").strip() or DEFAULT_AGENT


def request_for(tool_name: str, arguments: dict[str, Any], tool_use_id: str, agent: str) -> ApprovalRequestInput:
    """The prompt as an approval request: the tool and its input exactly as Claude Code would run them."""
    return ApprovalRequestInput(
        tool=tool_name,
        arguments=arguments,
        title=f"Claude Code wants to use {tool_name}",
        context=f"a Claude Code permission prompt ({agent}, tool use {tool_use_id})",
        requester=Requester(agent=agent),
    )


def answer(result: ApprovalResult) -> dict[str, Any]:
    """The decision in Claude Code's permission-prompt shape; a denial says why, for the model to read."""
    if result.approved:  # allow, or edit: the arguments are what may run
        return {"behavior": "allow", "updatedInput": result.arguments}
    return deny(_why(result))


def deny(message: str) -> dict[str, Any]:
    return {"behavior": "deny", "message": message}


def _why(result: ApprovalResult) -> str:
    reason = f": {result.reason}" if result.reason else ""
    if result.decision == "expired":
        return f"no one decided before the approval request expired (request {result.request_id})"
    if result.decision == "canceled":
        return f"the approval request was canceled{reason} (request {result.request_id})"
    if result.door == "policy":
        return f"the approvals service's rules deny it{reason}"
    return f"{result.decided_by or 'a person'} denied it{reason}"


class PermissionPrompts:
    """One connection to Temporal for the whole session, made on the first prompt (and again after a
    failure), so a session started while Temporal is down answers `deny` instead of never starting."""

    def __init__(self, session: Session, agent: str, interval: float) -> None:
        self._session = session
        self._agent = agent
        self._interval = interval
        self._connecting = asyncio.Lock()

    async def _client(self) -> Client:
        async with self._connecting:
            return await self._session.client()

    async def prompt(self, tool_name: str, arguments: dict[str, Any], tool_use_id: str | None, ctx: Context) -> str:
        """One prompt, start to decision, as the tool's JSON text. It waits as long as the request does."""
        key = tool_use_id or f"untracked-{uuid.uuid4().hex}"  # no id: nothing to find again
        try:
            request = request_for(tool_name, arguments, key, self._agent)
        except ValidationError as err:  # an empty tool name, say: nothing a rule could match
            return json.dumps(deny(f"not a permission prompt the approvals service can take: {_one_line(err)}"))
        try:
            client = await self._client()
        except CliError as err:
            log.error("prompt for %s (%s): %s", tool_name, key, err)
            return json.dumps(deny(f"the approvals service is not reachable: {err}"))
        try:
            request_id = await ask(client, self._session.settings, request, key, self._agent)
        except Exception as err:  # Temporal went away, or refused the start
            log.error("prompt for %s (%s) could not be asked: %s", tool_name, key, _one_line(err))
            return json.dumps(deny(f"the approvals service is not reachable: {_one_line(err)}"))
        log.info("prompt for %s (%s) is request %s", tool_name, key, request_id)
        try:
            result = await self._wait(client, request_id, ctx)
        except Exception as err:  # the request failed (invalid), or ended some way it cannot say
            log.error("request %s ended without a decision: %s", request_id, _one_line(err))
            return json.dumps(deny(f"the approval request {request_id} failed: {_one_line(err)}"))
        log.info("request %s: %s via %s", request_id, result.decision, result.door)
        return json.dumps(answer(result))

    async def _wait(self, client: Client, request_id: str, ctx: Context) -> ApprovalResult:
        """Wait for the decision in steps, sending a progress notification after each, so a client
        whose timeout resets on progress keeps the call open (a no-op without a progressToken)."""
        beats = 0
        while True:
            result = await outcome(client, request_id, self._interval)
            if result is not None:
                return result
            beats += 1
            await ctx.report_progress(beats, None, f"waiting for a decision on {request_id}")


def build_server(prompts: PermissionPrompts) -> MCPServer:
    """The MCP server with its one tool, named and shaped as Claude Code calls it."""
    server: MCPServer = MCPServer(name="approvals", instructions=DESCRIPTION)

    async def approval_prompt(
        tool_name: str, input: dict[str, Any], ctx: Context, tool_use_id: str | None = None
    ) -> str:
        return await prompts.prompt(tool_name, input, tool_use_id, ctx)

    server.add_tool(approval_prompt, name=TOOL_NAME, description=DESCRIPTION, structured_output=False)
    return server


async def mcp_permissions(args: argparse.Namespace, session: Session) -> int:
    """Serve until the client closes stdin (Claude Code ends the session)."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    prompts = PermissionPrompts(session, agent_name(), progress_seconds())
    await build_server(prompts).run_stdio_async()
    return EXIT_OK


def _one_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]
