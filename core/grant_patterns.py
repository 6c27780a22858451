"""The narrowest allow rule that covers a call, for an "allow calls like this" grant, and how to
widen one by a step, knowingly.

A grant is an allow rule a person adds after reading one call, so it should allow calls that do
the same thing and nothing a person would still want to read: `run_shell(git status*)` for
`git status -s`, `write_file(src/app/**)` for a file in src/app, the exact call for anything else.
A trailing `*` lets a later call append any arguments, so a command gets it only where appended
arguments cannot send, fetch, destroy, overwrite, open up or reconfigure something: a command that
sends to a URL or host, installs or fetches code, deletes, overwrites or changes permissions,
schedules or configures what runs later, or changes a cluster or a cloud is granted exactly as it
was asked (so `git push origin main` never covers `git push --force origin main`). A shell reading
its program from stdin, and `sudo`-like commands, get no grant at all; nor do files other programs
run by themselves (shell startup files, git hooks, CI definitions) and paths outside the workspace.

One limit of globs remains: `git status*` also covers `git status > file`; the sandbox, not a
rule, keeps such a write inside the workspace.

Pure: the same call always gives the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from core.policy import Rule, shell_segments
from core.tool_model import ToolDef
from core.tool_specs import TOOL_SPECS, main_argument_text


def _words(text: str) -> list[str]:
    return text.split()


# Commands granted only exactly, whatever follows them: they send, fetch and run, destroy,
# overwrite, change permissions, schedule, or run other commands named in their arguments.
SENDS = frozenset(
    _words("curl wget scp sftp rsync nc ncat netcat socat ssh telnet ftp http https xh rclone mail sendmail gh")
)
EXACT_ONLY = SENDS | frozenset(
    _words(
        "rm rmdir unlink shred dd mkfs truncate chmod chown chgrp chattr setfacl kill pkill killall shutdown reboot"
        " cp mv ln tee install crontab at npx pnpx bunx uvx pipx find xargs parallel watch aws gcloud az gsutil"
        " apt apt-get yum dnf brew gem conda iptables ufw mount umount"
    )
)
# Commands that read a program from their arguments or stdin, or change who runs it: never granted.
NEVER = frozenset(_words("sudo su doas pkexec eval source . exec"))
INTERPRETERS = frozenset(_words("sh bash zsh dash ksh fish python python3 node ruby perl php deno lua Rscript pwsh"))
INLINE_CODE = frozenset(["-c", "-e", "--eval", "-E", "-p", "--print", "-r"])

# Tools whose subcommand decides what they touch: the subcommands that get a `*` and how many
# words the pattern keeps (3: `npm run lint*`, the script is the third word); any other
# subcommand (push, config, reset, delete, scale, install, destroy, ...) is granted exactly.
_READS = ("get", "describe", "logs", "top", "explain", "version", "api-resources", "cluster-info", "events")
VERBS: dict[str, dict[str, int]] = {
    "git": dict.fromkeys(
        _words(
            "status diff log show blame grep ls-files rev-parse describe shortlog fetch add commit branch switch tag"
        ),
        2,
    ),
    "kubectl": dict.fromkeys(_READS, 2),
    "oc": dict.fromkeys(_READS, 2),
    "helm": dict.fromkeys(_words("list ls status get history show template lint search version"), 2),
    "terraform": dict.fromkeys(_words("plan validate fmt show output version providers graph"), 2),
    "tofu": dict.fromkeys(_words("plan validate fmt show output version providers graph"), 2),
    "docker": dict.fromkeys(_words("ps images logs inspect build version info stats top diff history"), 2),
    "podman": dict.fromkeys(_words("ps images logs inspect build version info stats top diff history"), 2),
    "systemctl": dict.fromkeys(_words("status list-units is-active is-enabled show cat"), 2),
    "npm": {**dict.fromkeys(_words("test t ls list outdated view why help"), 2), "run": 3, "run-script": 3},
    "yarn": {**dict.fromkeys(_words("test list why info outdated"), 2), "run": 3},
    "pnpm": {**dict.fromkeys(_words("test ls list why outdated"), 2), "run": 3},
    "bun": {"test": 2, "run": 3},
    "pip": dict.fromkeys(_words("list show freeze check"), 2),
    "pip3": dict.fromkeys(_words("list show freeze check"), 2),
    "uv": {"run": 3, "tree": 2},
    "poetry": {"run": 3, "show": 2, "check": 2},
    "pipenv": {"run": 3, "graph": 2},
    "go": {**dict.fromkeys(_words("test build vet fmt version env list"), 2), "run": 3},
    "cargo": {**dict.fromkeys(_words("test build check clippy fmt tree"), 2), "run": 3},
}
PLAIN_WORDS = 2  # any other command: its first two words, then `*`

# Files that other programs run or read by themselves: a write to one is never granted.
RUN_BY_OTHERS_DIRS = frozenset([".git", ".github", ".gitlab", ".husky", ".circleci", ".githooks"])
RUN_BY_OTHERS_FILES = frozenset(
    _words(
        ".bashrc .bash_profile .bash_login .profile .zshrc .zprofile .zshenv .envrc .gitlab-ci.yml"
        " .pre-commit-config.yaml .gitmodules"
    )
)

_GLOB_CHARACTER = re.compile(r"([*?\[])")
# An output redirection (`> f`, `>> f`, `2>f`), not a descriptor copy (`2>&1`): the call writes a file.
_DESCRIPTOR_COPY = re.compile(r"\d*>&\d*-?")


def literal(text: str) -> str:
    """Text as a glob that matches only itself (`*`, `?` and `[` bracketed)."""
    return _GLOB_CHARACTER.sub(r"[\1]", text)


def command_pattern(command: str) -> str | None:
    """The narrowest glob for one simple command (normalised, see core.shell_words); None when
    no grant may cover it."""
    words = command.split()
    if not words:
        return None
    name = words[0].rsplit("/", 1)[-1]  # /usr/bin/curl is curl
    inline = name in INTERPRETERS and bool(INLINE_CODE & set(words[1:]))
    if name in NEVER or (name in INTERPRETERS and not inline and not _script_of(words)):
        return None  # sudo and the like; or a program read from stdin: `curl x | sh`, `python - < x`
    if inline or name in EXACT_ONLY or _writes_a_file(name, words):
        keep = 0
    elif name in INTERPRETERS:
        keep = 3  # the interpreter, its script and the script's first argument
    elif name in VERBS:
        keep = VERBS[name].get(words[1], 0) if len(words) > 1 else 0
    else:
        keep = PLAIN_WORDS
    if keep == 0 or len(words) < keep:
        return literal(" ".join(words))
    return literal(" ".join(words[:keep])) + "*"


def _script_of(words: list[str]) -> str | None:
    """An interpreter's script: its first operand that is neither an option nor a redirection."""
    redirected = False
    for word in words[1:]:
        if redirected or word.startswith("-"):
            redirected = False
            continue
        if "<" in word or ">" in word:
            redirected = word.strip("0123456789&") in ("<", ">", ">>", "<<", "<<<")  # the file comes next
            continue
        return word
    return None


def _writes_a_file(name: str, words: list[str]) -> bool:
    """A redirection or an in-place edit: the file is an argument, so the command is kept whole."""
    if any(">" in _DESCRIPTOR_COPY.sub("", word) for word in words):
        return True
    return name == "sed" and any(word.startswith(("-i", "--in-place")) for word in words[1:])


def path_pattern(path: str) -> str | None:
    """A written file's directory `/**`, or the path itself at the top level; None outside the
    workspace and for files other programs run by themselves."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or path.startswith("/") or parts[0].startswith("~") or ".." in parts:
        return None
    if RUN_BY_OTHERS_DIRS & set(parts[:-1]) or parts[-1] in RUN_BY_OTHERS_FILES | RUN_BY_OTHERS_DIRS:
        return None
    directory, _, _ = path.rpartition("/")  # as written: rules match the path as the call gives it
    if directory in ("", "."):
        return literal(path)
    return literal(directory) + "/**"


def grant_rules(tool: str | ToolDef, arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """The allow rules that together cover this call and as little else as they can (one per simple
    command of a shell line, since an allow must cover every part); () when none may be offered.
    A tool outside the built-in catalog is matched as the worker matches it only when its ToolDef
    is given (an MCP tool's rule argument); by name alone, all its arguments are kept exactly."""
    definition = TOOL_SPECS.get(tool) if isinstance(tool, str) else tool
    if definition is None:  # a tool the catalog does not describe: all its arguments, exactly
        definition = ToolDef(name=str(tool), description="", parameters={}, permission_type="write")
    name, argument = definition.name, main_argument_text(definition, dict(arguments))
    if definition.splitter == "shell":
        patterns = [command_pattern(segment) for segment in shell_segments(argument)]
        if any(pattern is None for pattern in patterns):
            return ()
        return tuple(dict.fromkeys(f"{name}({pattern})" for pattern in patterns))
    writes_a_path = definition.permission_type == "write" and definition.rule_argument in definition.path_arguments
    if writes_a_path:
        pattern = path_pattern(argument)
        return () if pattern is None else (f"{name}({pattern})",)
    return (f"{name}({literal(argument)})",)


def grant_rule(tool: str | ToolDef, arguments: Mapping[str, Any]) -> str | None:
    """The one rule that covers this call, for a grant of a single pattern; None when the call
    needs several (a compound command) or may get none."""
    rules = grant_rules(tool, arguments)
    return rules[0] if len(rules) == 1 else None


def widen(rule: str) -> str | None:
    """The same rule one step wider, each step a superset of the last: for a command, `a b c` →
    `a b c*` → `a b *` → `a *` → the whole tool; for a path, `a/b/f` → `a/b/**` → `a/**` → the
    whole tool; any other pattern → the whole tool; an MCP tool → its server's tools; None when
    nothing wider is worth offering."""
    parsed = Rule.parse(rule)
    if parsed.pattern is None:
        server = re.fullmatch(r"(mcp__[A-Za-z0-9_-]+?__)[A-Za-z0-9_.-]+", parsed.tool)
        return f"{server.group(1)}*" if server else None
    definition = TOOL_SPECS.get(parsed.tool)
    if definition is not None and definition.splitter == "shell":
        wider = _wider_command(parsed.pattern)
    elif definition is not None and definition.path_arguments:
        wider = _wider_path(parsed.pattern)
    else:
        wider = None
    return parsed.tool if wider is None else f"{parsed.tool}({wider})"


def _wider_command(pattern: str) -> str | None:
    if not pattern.endswith("*"):
        return pattern + "*"
    words = pattern[:-1].split()
    if len(words) <= 1:
        return None  # `a *` or `a*`: next is the whole tool
    return " ".join(words[:-1]) + " *"


def _wider_path(pattern: str) -> str | None:
    parts = pattern.split("/")
    parts = parts[:-2] if pattern.endswith("/**") else parts[:-1]
    return "/".join(parts) + "/**" if parts else None
