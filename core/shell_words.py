"""Shell command lines reduced to the simple commands they run, for rule matching.

`ls; sudo x`, `(sudo x)`, `if sudo x; ...`, `A="x y" sudo x`, `time -p sudo x`, `nice -n 5 sudo x`,
`timeout -s KILL 5 sudo x`, `env A=1 sudo x`, `command sudo x`, `exec sudo x`, `nohup sudo x` and
`sudo<TAB>x` all become `sudo x`, so a deny rule sees them. A guard against slips, not a parser of
shell: `bash -c`, `eval`, variables and aliases still hide a command; the sandbox is the boundary.
Pure and deterministic: workflow code calls it.
"""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"\|\||&&|\$\(|[;|&\n()`]")
# One shell word: unquoted runs, "double" or 'single' quoted parts (maybe unterminated), \escapes.
_WORD = re.compile(r"""(?:[^\s"'\\]+|"(?:[^"\\]|\\.)*"?|'[^']*'?|\\.?)+""", re.DOTALL)
_PART = re.compile(r""""((?:[^"\\]|\\.)*)"?|'([^']*)'?|\\(.?)|([^"'\\]+)""", re.DOTALL)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_RESERVED = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"})
# Wrappers that run the command after them, and their options that take a separate argument.
_WRAPPERS: dict[str, frozenset[str]] = {
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
}


def unquote(word: str) -> str:
    """The word as the shell passes it on (quotes and backslashes removed; no expansion)."""
    out = []
    for double, single, escaped, plain in _PART.findall(word):
        out.append(re.sub(r"\\(.)", r"\1", double) if double else single or escaped or plain)
    return "".join(out)


def _split_quoted(command: str) -> list[str]:
    """Split at separators outside quotes. `$(...)` and backquotes run even inside double quotes,
    so they split there too; single quotes hide everything."""
    parts, current, stack, i = [], "", ["cmd"], 0
    while i < len(command):
        context, char = stack[-1], command[i]
        step, cut = 1, False
        if context == "'":
            if char == "'":
                stack.pop()
        elif char == "\\":
            step = 2
        elif command.startswith("$(", i):
            stack.append("cmd")
            step, cut = 2, True
        elif char == "`":
            if context == "`":
                stack.pop()
            else:
                stack.append("`")
            cut = True
        elif context == '"':
            if char == '"':
                stack.pop()
        elif char in "'\"":
            stack.append(char)
        elif char == ")" and context == "cmd" and len(stack) > 1:
            stack.pop()
            cut = True
        elif separator := _SEPARATORS.match(command, i):
            step, cut = len(separator.group()), True
        if cut:
            parts.append(current)
            current = ""
        else:
            current += command[i : i + step]
        i += step
    return [*parts, current]


def _strip_leading(words: list[str]) -> list[str]:
    """Drop what only leads a command: reserved words, assignments, wrappers and their options."""
    i = 0
    while i < len(words):
        word = unquote(words[i])
        if words[i] in _RESERVED or _ASSIGNMENT.match(word):
            i += 1
        elif word in _WRAPPERS:
            i = _skip_options(words, i + 1, _WRAPPERS[word])
            if word == "timeout" and i < len(words):
                i += 1  # the duration
        else:
            break
    return words[i:]


def _skip_options(words: list[str], i: int, takes_argument: frozenset[str]) -> int:
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        option = words[i]
        i += 1
        if option == "--":
            break
        if option in takes_argument:
            i += 1
    return i


def simple_commands(command: str) -> list[str]:
    """Each simple command of the line, normalised: unquoted words joined by one space. The line is
    split twice, ignoring quotes and honouring them, so that `A="x; y" sudo z` is seen whole."""
    commands: list[str] = []
    for part in [*_SEPARATORS.split(command), *_split_quoted(command)]:
        words = _strip_leading(_WORD.findall(part))
        normal = " ".join(unquote(w) for w in words).strip()
        if normal and normal not in commands:
            commands.append(normal)
    return commands


def collapse_whitespace(command: str) -> str:
    return " ".join(command.split())
