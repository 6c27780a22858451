"""The workspace_saves section of bench/results.md: bytes a save writes, first and per one-line edit."""

from __future__ import annotations

from typing import Any


def workspace_saves_section(s: dict[str, Any]) -> list[str]:
    out = [
        "## Workspace saves",
        "",
        "A workspace saved to the payload store after a tool that may write, as a host that leaves needs it:"
        " the first save, a save with nothing changed, and the save after a one-line edit of one file (bytes new"
        " to the store per tool), in a 50 MiB and a 5 MiB workspace of text files.",
        "",
        "| workspace | files | first save | unchanged save | one-line edit: bytes per tool (p50, max) | edit save s p50"
        " | edit / first save | restore on a new host |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in s.items():
        if not isinstance(row, dict) or "first_save" not in row:
            continue
        first, unchanged, edit = row["first_save"], row["unchanged_save"], row["edit_save"]
        restore = row.get("restore_on_new_host")
        restored = f"{restore['seconds']} s" if restore else "-"
        out.append(
            f"| {name.removeprefix('workspace_').replace('_mib', ' MiB')} | {row['files']}"
            f" | {first['bytes_written']:,} B, {first['seconds']} s"
            f" | {unchanged['bytes_written']:,} B, {unchanged['seconds']} s"
            f" | {edit['bytes_written_per_tool']:,.0f} B, {edit['bytes_written_max']:,} B | {edit['seconds_p50']}"
            f" | {row['edit_over_first_save']}"
            f" | {restored} |"
        )
    return [*out, ""]
