"""Allow rules that can never take effect, because an ask rule matches every call they allow.

An ask rule outranks every allow rule, so `ask = ["run_shell"]` makes `allow =
["run_shell(git status*)"]` dead text: every call the allow matches is asked all the same. This
is decided conservatively, by containment of the globs: a whole-tool ask shadows every allow of
that tool, and an ask glob shadows an allow glob when it is the same glob, matches the allow's
literal value, or is a literal prefix followed by `*` or `**` that the allow's own literal prefix
starts with (`write_file(docs/**)` shadows `write_file(docs/a/**)`). Anything subtler is not
reported, so a warning is always true.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from core.policy import Rule
from core.policy_rules import PolicyRules

_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Shadow:
    allow: str
    ask: str

    def text(self) -> str:
        return (
            f"allow rule {self.allow!r} never takes effect: ask rule {self.ask!r} matches every call it allows"
            " (an ask outranks every allow; narrow or remove the ask rule)"
        )

    def as_dict(self) -> dict[str, str]:
        return {"allow": self.allow, "ask": self.ask}


def _literal_prefix(glob: str) -> str:
    found = _GLOB.search(glob)
    return glob if found is None else glob[: found.start()]


def covers(outer: str, inner: str) -> bool:
    """Whether every value the glob `inner` matches, `outer` matches too (decided conservatively)."""
    if outer == inner:
        return True
    if _GLOB.search(inner) is None:
        return fnmatchcase(inner, outer)
    stem = outer.rstrip("*")
    if stem != outer and _GLOB.search(stem) is None:
        return _literal_prefix(inner).startswith(stem)
    return False


def shadowing_ask(ask_rules: list[str], allow_rule: str) -> str | None:
    """The first ask rule that matches every call `allow_rule` allows; None when none does."""
    allow = Rule.parse(allow_rule)
    for text in ask_rules:
        ask = Rule.parse(text)
        if not covers(ask.tool, allow.tool):
            continue
        if ask.pattern is None or covers(ask.pattern, allow.pattern if allow.pattern is not None else "*"):
            return text
    return None


def shadowed_allows(rules: PolicyRules) -> list[Shadow]:
    """Every allow rule of one rule set that an ask rule of the same set shadows entirely."""
    found = []
    for allow in rules.allow:
        ask = shadowing_ask(rules.ask, allow)
        if ask is not None:
            found.append(Shadow(allow, ask))
    return found
