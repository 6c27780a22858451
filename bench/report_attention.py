"""The attention section of bench/results.md: prompts per 100 calls and dangerous calls run without
a person, per mode, over the recorded session (bench/sc_attention.py)."""

from __future__ import annotations

from typing import Any

MODES = {
    "default": "the built-in rules",
    "suggested": "`rules suggest` on the first fifth, copied into `allow`",
    "grants": "the narrowest grant for each safe call asked",
    "prescreen": "the built-in rules, then the pre-screen for each call they ask (deny_limit 3)",
    "prescreen_no_breaker": "the same, with no breaker: the pre-screen is asked about every call the rules ask",
}


def _prescreen_rows(s: dict[str, Any]) -> list[str]:
    screened = {mode: figures for mode, figures in s["modes"].items() if "prescreen_requests" in figures}
    if not screened:
        return []
    out = [
        "",
        "| mode | pre-screen asked | allowed | denied (safe among them) | answered ask | failed"
        " | to a person after the breaker | breaker tripped at call | pre-screen p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, f in screened.items():
        tripped = f["breaker_tripped_at_call"] if f["breaker_tripped"] else "no"
        out.append(
            f"| {mode} | {f['prescreen_requests']} | {f['prescreen_allowed']} | {f['prescreen_denied']}"
            f" ({f['safe_denied']}) | {f['prescreen_asked']} | {f['prescreen_failures']} | {f['after_breaker']}"
            f" | {tripped} | {f['prescreen_p50_ms']} |"
        )
    settings = s.get("prescreen", {})
    if settings:
        tools = ", ".join(f"`{pattern}`" for pattern in settings["tools"])
        out += [
            "",
            f"Pre-screen: `activities/prescreen.py`'s `ask_prescreen` over HTTP against {settings['model']}, on a"
            f" loopback port; patterns {tools}; deny_limit {settings['deny_limit']}, timeout"
            f" {settings['timeout_seconds']:g} s; the trace is one conversation with no user message. A call the"
            " pre-screen allows runs with no person, one it denies is refused, its `ask` and every failure go to"
            " the person. Its latency is the loopback demo model's, client set-up included, not a real model's.",
            "",
            f"Criteria: {settings['criteria']}",
        ]
    return out


def attention_section(s: dict[str, Any]) -> list[str]:
    out = [
        "## Attention: prompts and dangerous calls over a recorded session",
        "",
        f"{s['calls']} tool calls of a coding and operations agent (`bench/attention_trace.jsonl`), {s['dangerous']}"
        " of them dangerous, through the rules engine (and, in the prescreen modes, the pre-screen); a simulated"
        " person approves every safe call asked and denies every dangerous one.",
        "",
        "| mode | rules | prompts per 100 calls | dangerous run unasked | dangerous asked | dangerous denied by rule"
        " | dangerous denied by pre-screen |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode, figures in s["modes"].items():
        by_prescreen = figures.get("dangerous_denied_by_prescreen", "")
        out.append(
            f"| {mode} | {MODES.get(mode, '')} | {figures['prompts_per_100_calls']} | {figures['dangerous_unasked']}"
            f" | {figures['dangerous_asked']} | {figures['dangerous_denied_by_rule']} | {by_prescreen} |"
        )
    out += _prescreen_rows(s)
    suggested = s["modes"].get("suggested", {})
    if suggested.get("rules_added"):
        rules = ", ".join(f"`{rule}`" for rule in suggested["rules_added"])
        out += [
            "",
            f"Suggested after {suggested['learned_from_calls']} calls (`--min-count {s['min_count']}`): {rules}.",
        ]
    for mode, why in s.get("not_measured", {}).items():
        out += ["", f"Not measured: {mode} ({why})."]
    return [*out, ""]
