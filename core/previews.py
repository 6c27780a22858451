"""What an asked call will do, shown beside its arguments: a file's diff, a command's words, a tool's hints.

Pure: the preview activity (activities/previews.py) reads the target confined, as the tool would,
and hands the bytes here. The hash of what it read (`target_hash`) binds the decision to that
state: the tool's activity compares it right before it writes, and a changed target makes the
call stale instead of overwriting what nobody saw.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import re
import zlib
from typing import Any, Literal

from pydantic import Field

from core.shell_words import collapse_whitespace, simple_commands
from core.wire_model import WireModel

PreviewKind = Literal["file", "shell", "tool"]
ABSENT = "absent"  # the target hash of a file that does not exist yet
MAX_DIFF_CHARS = 32_000  # what a card, the read model and a payload hold of one diff
MAX_NEW_FILE_CHARS = 8_000  # what the card shows of a new file's content
# The annotations MCP defines for a tool, in the order a card lists them.
MCP_HINTS = ("destructiveHint", "readOnlyHint", "openWorldHint", "idempotentHint")
# A boolean argument by one of these names is a tool's own dry run (the reference filesystem
# server's edit_file has `dryRun`): the preview calls the tool with it set, before anyone decides.
DRY_RUN_ARGUMENTS = ("dryRun", "dry_run")
DRY_RUN_SHOWN_CHARS = 20_000
CONTEXT_LINES = 3
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


class EffectPreview(WireModel):
    """One request's preview, stored with it (read model column preview_json)."""

    kind: PreviewKind
    summary: str = Field(description="one line: what the call will change")
    path: str | None = None
    new_file: bool = False
    diff: str | None = Field(default=None, description="unified diff text (a new file: its content as added lines)")
    target_hash: str | None = Field(default=None, description="sha256 of the content read; 'absent': no file")
    size_before: int | None = None
    size_after: int | None = None
    lines_before: int | None = None
    lines_after: int | None = None
    lines_added: int = 0
    lines_removed: int = 0
    note: str | None = Field(default=None, description="binary, too large, truncated, or could not read")
    words: list[str] = Field(default_factory=list, description="run_shell: the simple commands the rules see")
    rule: str | None = Field(default=None, description="run_shell: the rule that asked (None: no allow covers it)")
    hints: dict[str, Any] = Field(default_factory=dict, description="an MCP tool's annotations")
    dry_run: str | None = Field(default=None, description="an MCP tool's own dry run of the call: what it answered")
    changed_since: str | None = Field(default=None, description="a re-asked call: what changed since it was asked")
    wrong_host: bool = Field(default=False, description="not read: this worker is not on the request's host queue")


def pack_content(text: str) -> str:
    """A write's new content, compressed: a preview's input then stays under the payload store's
    threshold for a text of many times that size, and goes to its activity without being stored."""
    return base64.b64encode(zlib.compress(text.encode(errors="surrogatepass"), 1)).decode()


def unpack_content(packed: str) -> str:
    return zlib.decompress(base64.b64decode(packed)).decode(errors="surrogatepass")


def content_hash(data: bytes | None) -> str:
    """The hash a decision binds to: of the bytes, or ABSENT for a file that is not there."""
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB"


def file_preview(path: str, before: bytes | None, after: bytes, *, target_hash: str | None = None) -> EffectPreview:
    """write_file's preview: before is the current content (None: no such file)."""
    common: dict[str, Any] = {"kind": "file", "path": path, "size_after": len(after), "lines_after": _lines(after)}
    target = target_hash or content_hash(before)
    if before is None:
        text, note = after.decode(errors="replace"), None
        if b"\x00" in after:
            text, note = "", "binary content: not shown"
        elif len(text) > MAX_NEW_FILE_CHARS:
            text, note = text[:MAX_NEW_FILE_CHARS], f"content shortened to its first {MAX_NEW_FILE_CHARS} characters"
        shown = "".join(f"+{line}\n" for line in text.splitlines())
        return EffectPreview(
            **common,
            new_file=True,
            target_hash=target,
            diff=shown,
            lines_added=_lines(after),
            note=note,
            summary=f"new file {path}: {_size(len(after))}, {_lines(after)} lines",
        )
    base: dict[str, Any] = {**common, "target_hash": target, "size_before": len(before), "lines_before": _lines(before)}
    if b"\x00" in before or b"\x00" in after:
        return EffectPreview(
            **base, note="binary file: no diff shown", summary=f"overwrite binary file {path}: {_size(len(before))}"
        )
    old, new = before.decode(errors="replace").splitlines(True), after.decode(errors="replace").splitlines(True)
    diff = unified_lines(old, new, path)
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
    note = None if diff else "no change: the content is the file's own"
    if len(text) > MAX_DIFF_CHARS:
        text, note = text[:MAX_DIFF_CHARS], f"diff shortened to its first {MAX_DIFF_CHARS} characters"
    return EffectPreview(
        **base,
        diff=text,
        lines_added=added,
        lines_removed=removed,
        note=note,
        summary=f"overwrite {path}: +{added} -{removed} lines, {_size(len(before))} -> {_size(len(after))}",
    )


def unified_lines(old: list[str], new: list[str], path: str) -> list[str]:
    """difflib's unified diff, matched only between the lines that differ: the lines both share at
    the start and at the end (most of a file, for an edit) are context, never compared again."""
    same_start, most = 0, min(len(old), len(new))
    while same_start < most and old[same_start] == new[same_start]:
        same_start += 1
    same_end = 0
    while same_end < most - same_start and old[-1 - same_end] == new[-1 - same_end]:
        same_end += 1
    cut = max(0, same_start - CONTEXT_LINES)
    keep = max(0, same_end - CONTEXT_LINES)
    lines = difflib.unified_diff(
        old[cut : len(old) - keep], new[cut : len(new) - keep], f"a/{path}", f"b/{path}", n=CONTEXT_LINES
    )
    return [_shifted(line, cut) if line.startswith("@@") else line for line in lines]


def _shifted(header: str, by: int) -> str:
    """A hunk header of the cut-out part, numbered as in the whole file."""
    found = _HUNK.match(header)
    if found is None or by == 0:
        return header
    old_start, old_len, new_start, new_len = found.groups()
    numbered = f"@@ -{int(old_start) + by}{old_len or ''} +{int(new_start) + by}{new_len or ''} @@"
    return numbered + header[found.end() :]


def unreadable_preview(path: str, after: bytes, why: str, target_hash: str | None) -> EffectPreview:
    """The file is there but not shown (too large, not a regular file): its hash still binds."""
    return EffectPreview(
        kind="file",
        path=path,
        size_after=len(after),
        lines_after=_lines(after),
        target_hash=target_hash,
        note=why,
        summary=f"overwrite {path} ({why})",
    )


def shell_preview(command: str, rule: str | None) -> EffectPreview:
    words = simple_commands(command) or [collapse_whitespace(command)]
    asked = f"asked by rule {rule}" if rule else "asked: no allow rule covers every part"
    return EffectPreview(kind="shell", words=words, rule=rule, summary=f"{len(words)} command(s), {asked}")


def tool_preview(annotations: dict[str, Any]) -> EffectPreview:
    hints = {name: annotations[name] for name in MCP_HINTS if name in annotations}
    said = ", ".join(f"{name.removesuffix('Hint')}: {str(value).lower()}" for name, value in hints.items())
    return EffectPreview(kind="tool", hints=hints, summary=said or "the tool declares no annotations")


def dry_run_argument(parameters: dict[str, Any]) -> str | None:
    """The argument that makes this tool only say what it would do, when its schema offers one."""
    properties = parameters.get("properties") or {}
    for name in DRY_RUN_ARGUMENTS:
        declared = properties.get(name)
        if isinstance(declared, dict) and declared.get("type") == "boolean":
            return name
    return None


def with_dry_run(preview: EffectPreview, answer: str, failed: bool) -> EffectPreview:
    """A tool preview with the tool's own dry-run answer (shortened), or why it has none."""
    if failed:
        return preview.model_copy(update={"note": f"the tool's dry run failed: {answer[:500]}"})
    summary = f"{preview.summary}; with the tool's own dry run (the card, show REQUEST)"
    note = None
    if len(answer) > DRY_RUN_SHOWN_CHARS:  # shortened as a diff is, and said so the same way
        answer, note = answer[:DRY_RUN_SHOWN_CHARS], f"dry run shortened to its first {DRY_RUN_SHOWN_CHARS} characters"
    return preview.model_copy(update={"dry_run": answer, "summary": summary, "note": note or preview.note})


def changed_note(before: EffectPreview | None, now: EffectPreview) -> str:
    """What a re-asked call's card says changed since the first request."""
    old = before.target_hash if before is not None else None
    size = f" ({_size(now.size_before)} now)" if now.size_before is not None else ""
    if now.target_hash == ABSENT:
        return f"{now.path} was removed after the call was asked"
    if old == ABSENT:
        return f"{now.path} was created after the call was asked{size}"
    return f"{now.path} changed after the call was asked{size}: the diff is against its new content"
