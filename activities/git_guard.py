"""Git with the repository's own commands off, for every stdio MCP server.

A repository's `.git/config` can name programs git runs on a plain read: `core.fsmonitor` on
`git status`, a filter's `clean` command, an external diff or a textconv on `git diff`, hooks,
`core.sshCommand`. The agent can write that file, so a read-only tool over a repository would run
its code. Every stdio MCP server therefore gets:

- fixed settings in its environment (GIT_CONFIG_COUNT / GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n,
  the command-line scope, which outranks the repository's config), no system config and an empty
  global one;
- a `git` first on its PATH that, before running the real git, blanks every driver command the
  repository's configuration names (filter, diff and merge drivers, `diff.external`): those names
  are the repository's choice, so no fixed list can cover them. A blanked driver fails the command
  or is skipped; it never runs.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Command-line scope settings: each turns a repository-controlled program off.
GIT_SETTINGS: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.sshCommand", "false"),
    ("core.askPass", "false"),
    ("core.editor", "false"),
    ("core.pager", "cat"),
    ("sequence.editor", "false"),
    ("credential.helper", ""),  # an empty value empties the list of helpers
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    # The sandbox may run as another uid than the repository's owner; the ownership check guards
    # against a foreign repository's config, which the settings above already defuse.
    ("safe.directory", "*"),
)

# Run by the `git` wrapper. Leading global options (-C, --git-dir, ...) are repeated for the
# configuration query so it reads the repository the command is about.
_WRAPPER = r"""#!/bin/sh
real=__REAL_GIT__
lead=
i=1
while [ "$i" -le $# ]; do
  eval "arg=\${$i}"
  case $arg in
    -C|-c|--git-dir|--work-tree|--namespace)
      lead="$lead \"\${$i}\""; i=$((i + 1)); lead="$lead \"\${$i}\"" ;;
    --git-dir=*|--work-tree=*|--namespace=*|--bare|--no-replace-objects|--literal-pathspecs) lead="$lead \"\${$i}\"" ;;
    -*) ;;
    *) break ;;
  esac
  i=$((i + 1))
done
pattern='^(diff\.external|(filter|diff|merge)\..+\.(clean|smudge|process|command|textconv|driver))$'
keys=$(eval "\"\$real\" $lead config --name-only --get-regexp '$pattern'" 2>/dev/null)
IFS='
'
for key in $keys; do
  case $key in
    *=*) echo "git: refusing a configuration key with '=' in its name: $key" >&2; exit 128 ;;
  esac
  set -- -c "$key=" "$@"
done
unset IFS
exec "$real" "$@"
"""

_guard_dir: Path | None = None


def real_git(path: str | None = None) -> str | None:
    """The git the wrapper runs: the first on PATH that is not a wrapper of ours."""
    for entry in (path or os.environ.get("PATH", os.defpath)).split(os.pathsep):
        if _guard_dir is not None and Path(entry) == _guard_dir:
            continue
        found = shutil.which("git", path=entry)
        if found is not None:
            return os.path.abspath(found)
    return None


def guard_dir() -> Path | None:
    """A directory holding only the `git` wrapper (written once per worker); None without git."""
    global _guard_dir
    if _guard_dir is not None and (_guard_dir / "git").exists():
        return _guard_dir
    real = real_git()
    if real is None:
        return None
    directory = Path(tempfile.mkdtemp(prefix="mcp-git-guard-"))
    atexit.register(shutil.rmtree, directory, True)
    wrapper = directory / "git"
    wrapper.write_text(_WRAPPER.replace("__REAL_GIT__", "'" + real.replace("'", "'\\''") + "'"))
    wrapper.chmod(0o755)
    directory.chmod(0o755)
    _guard_dir = directory
    return directory


def git_environment(path: str) -> dict[str, str]:
    """The variables a server's environment gets (over what its configuration sets): the settings,
    no system or global config, no prompts, and the wrapper first on `path`."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0"}
    env["GIT_CONFIG_COUNT"] = str(len(GIT_SETTINGS))
    for index, (key, value) in enumerate(GIT_SETTINGS):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    guard = guard_dir()
    env["PATH"] = f"{guard}{os.pathsep}{path}" if guard is not None else path
    return env
