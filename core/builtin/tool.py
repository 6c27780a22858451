"""What a built-in tool is: one definition, read by everything that handles its calls.

A definition holds the tool's spec (what the model sees and the rules match), its capabilities
(what previews, the stale-target check, undo and the shell-rule normalisation read instead of its
name) and its code. The spec is derived here, so the parts of it that follow from an effect (a
confined path argument, shell splitting) cannot disagree with it; a definition that contradicts
itself fails when it is imported, not when a model calls it.

`run` executes only in the tool activity: a definition imports its activity helpers inside `run`,
so workflow code and the doors import definitions as pure core (tests/project/test_import_rules.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from core.tool_model import PermissionType, ToolDef

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace

__all__ = ["PATH", "BuiltinTool", "Effect", "Heartbeat", "Run"]

# file_read: reads below the workspace at the path its main argument names;
# file_write: writes a whole file there (its content argument holds the text);
# shell: runs the command its main argument holds, in the sandbox;
# state: reads or changes the conversation's key/value state only.
Effect = Literal["file_read", "file_write", "shell", "state"]
Heartbeat = Callable[[], None]
# (workspace, the conversation's kv state, validated arguments, heartbeat) -> the model's text.
Run = Callable[["Workspace", "KvStore", dict[str, Any], Heartbeat], Awaitable[str]]

PATH: dict[str, Any] = {"type": "string", "description": "path relative to the workspace"}


@dataclass(frozen=True, eq=False)
class BuiltinTool:
    """One built-in tool. Every argument is required; `main` is the one rules glob over."""

    name: str
    description: str
    permission_type: PermissionType
    arguments: Mapping[str, dict[str, Any]]  # each argument's JSON schema, in the order the model sees them
    main: str  # the path (file effects), the command (shell), the key (state)
    effect: Effect
    run: Run
    content: str | None = None  # file_write: the argument holding the text written
    preview: bool = False  # an asked call shows its effect, read on its host: a write's diff, a command's words
    stale_check: bool = False  # an approved call is not run when its target changed since the person's preview
    undo: bool = False  # what an approved call replaced is kept, so a person can undo it with a call of this tool
    spec: ToolDef = field(init=False)

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ValueError(f"built-in tool {self.name}: {'; '.join(problems)}")
        spec = ToolDef(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": dict(self.arguments),
                "required": list(self.arguments),
                "additionalProperties": False,
            },
            permission_type=self.permission_type,
            rule_argument=self.main,
            splitter="shell" if self.effect == "shell" else "none",
            path_arguments=[self.main] if self.effect in ("file_read", "file_write") else [],
            at_most_once=self.permission_type in ("write", "execute"),
        )
        object.__setattr__(self, "spec", spec)

    def _problems(self) -> list[str]:
        found = []
        if self.main not in self.arguments:
            found.append(f"its main argument {self.main!r} is not one of its arguments")
        if (self.content is not None) != (self.effect == "file_write"):
            found.append("a file_write names its content argument, and only a file_write does")
        elif self.content is not None and self.content not in self.arguments:
            found.append(f"its content argument {self.content!r} is not one of its arguments")
        if self.preview and self.effect not in ("file_write", "shell"):
            found.append("only a file_write or a shell command has a preview of its effect")
        if (self.stale_check or self.undo) and not (self.effect == "file_write" and self.preview):
            found.append("a stale check or an undo needs a previewed file_write (the preview's hash binds it)")
        if not inspect.iscoroutinefunction(self.run):
            found.append("its run is not an async function")
        return found

    def written(self, arguments: Mapping[str, Any]) -> tuple[str, str]:
        """A file_write call's path and the text it writes."""
        if self.content is None:
            raise ValueError(f"{self.name} writes no file")
        return str(arguments.get(self.main, "")), str(arguments.get(self.content, ""))

    def writing(self, path: str, text: str) -> dict[str, Any]:
        """The arguments of a call of this file_write that writes `text` at `path` (an undo's call)."""
        if self.content is None:
            raise ValueError(f"{self.name} writes no file")
        return {self.main: path, self.content: text}
