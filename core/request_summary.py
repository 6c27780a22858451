"""A request in one short line, for a notification too small for the card: the tool and its main
argument (what rules glob over), shortened, hidden characters shown escaped as the card shows them
(core/visible.py), so a lock screen cannot read as something other than what will run."""

from __future__ import annotations

import json
from typing import Any

from core.tool_specs import TOOL_SPECS
from core.visible import reveal

SUMMARY_CHARACTERS = 140


def request_summary(tool_name: str, arguments: dict[str, Any], limit: int = SUMMARY_CHARACTERS) -> str:
    """`run_shell: rm -rf build`; the arguments as compact JSON when the tool names no main one."""
    text = f"{tool_name}: {_main_argument(tool_name, arguments)}"
    shown = reveal(text).text
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _main_argument(tool_name: str, arguments: dict[str, Any]) -> str:
    spec = TOOL_SPECS.get(tool_name)
    if spec is not None and spec.rule_argument is not None:
        value = arguments.get(spec.rule_argument)
        if isinstance(value, str):
            return value
    strings = [value for value in arguments.values() if isinstance(value, str)]
    if len(arguments) == 1 and strings:
        return strings[0]
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
