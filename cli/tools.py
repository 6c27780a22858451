"""`tools`: every tool the worker would offer, where it comes from, and the rule that applies.

It lists the catalog as the worker does (the configured Python modules are imported and the MCP
servers asked), so a server that is down shows up here as unavailable.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.output import note, print_json, shown, table
from cli.temporal import Session


def _hints(annotations: dict[str, Any]) -> str:
    names = {"readOnlyHint": "read-only", "destructiveHint": "destructive", "idempotentHint": "idempotent"}
    shown = [label for key, label in names.items() if annotations.get(key)]
    if annotations.get("openWorldHint"):
        shown.append("open-world")
    return ", ".join(shown)


def rules_naming(lists: dict[str, list[str]], tool_name: str) -> list[str]:
    """Every rule of the policy that can match this tool, as `deny: run_shell(sudo *)`."""
    from fnmatch import fnmatchcase

    from core.policy import Rule

    return [
        f"{verdict}: {text}"
        for verdict, texts in lists.items()
        for text in texts
        if fnmatchcase(tool_name, Rule.parse(text).tool)
    ]


async def describe_tools(session: Session) -> dict[str, Any]:
    from activities.python_tools import PythonToolError
    from activities.tool_sources import ToolSources
    from config.settings import ConfigError
    from core.policy import evaluate

    try:
        policy = session.settings.load_policy()
        settings = session.settings
        sources = ToolSources(settings.load_tools(), settings.workspace_dir, settings.sandbox_policy())
    except (ConfigError, PythonToolError) as err:
        raise CliError(str(err), EXIT_USAGE) from None
    try:
        catalog = await sources.catalog()
    finally:
        await sources.close()
    lists = {"deny": policy.deny, "ask": policy.ask, "allow": policy.allow}
    tools = [
        {
            "name": tool.name,
            "source": tool.source,
            "origin": tool.origin,
            "permission_type": tool.permission_type,
            # The verdict for a call that no argument pattern singles out.
            "verdict": "allow" if policy.mode == "auto_approve" else evaluate(policy, tool, ""),
            "rules": rules_naming(lists, tool.name),
            "annotations": tool.annotations,
            "description": tool.description,
        }
        for tool in catalog.tools
    ]
    return {"mode": policy.mode, "tools": tools, "unavailable": catalog.unavailable}


async def tools(args: argparse.Namespace, session: Session) -> int:
    listing = await describe_tools(session)
    if args.json:
        print_json(listing)
        return EXIT_OK
    rows = [
        [
            tool["name"],
            tool["source"] if tool["source"] == "builtin" else f"{tool['source']} {tool['origin']}",
            tool["permission_type"],
            tool["verdict"],
            "; ".join(tool["rules"]) or "(no rule: asked)",
            _hints(tool["annotations"]),
        ]
        for tool in listing["tools"]
    ]
    print(table(["TOOL", "SOURCE", "PERMISSION", "VERDICT", "RULES", "HINTS"], rows))
    for source, why in listing["unavailable"].items():
        # A server that exited at start ends its reason with its stderr's last lines: kept as lines.
        note(shown(f"unavailable: {source}: {why}", keep_newlines=True))
    return EXIT_OK
