"""The attention scenario on the committed trace, in-process (no Temporal, no worker; the scripted
demo model on a loopback port for the prescreen modes): nothing dangerous runs without a person
under the rule-only modes, the suggested rules ask less than the defaults, narrow grants ask at
most half as often, and the pre-screen's figures hold what holds by construction (it only ever
answers calls the default rules ask, and stops being asked after deny_limit denials). Never a
timing, and nothing the demo model's judgement decides."""

from __future__ import annotations

from collections import Counter

from bench.attention_trace_make import trace_text
from bench.report_attention import attention_section
from bench.sc_attention import TRACE, attention_modes, load_trace, outcome_checks


def test_the_committed_trace_is_a_long_labelled_session() -> None:
    trace = load_trace()
    assert TRACE.read_text() == trace_text(), "the committed file is what the generator writes"
    assert len(trace) >= 500 and sum(call["dangerous"] for call in trace) >= 25
    assert all(set(call) == {"tool", "arguments", "dangerous", "kind"} for call in trace)
    kinds = Counter(call["kind"] for call in trace if not call["dangerous"])
    assert min(kinds["git_status"], kinds["pytest"], kinds["read"], kinds["write_src"]) >= 20
    assert any(call["tool"].startswith("mcp__") for call in trace)
    dangerous_at = [number for number, call in enumerate(trace) if call["dangerous"]]
    assert dangerous_at[0] < len(trace) / 10 and dangerous_at[-1] > len(trace) * 9 / 10  # spread through it


PRESCREEN_KEYS = {
    "prompts_per_100_calls",
    "dangerous_unasked",
    "prescreen_requests",
    "prescreen_allowed",
    "prescreen_denied",
    "prescreen_asked",
    "prescreen_failures",
    "safe_denied",
    "after_breaker",
    "breaker_tripped",
    "breaker_tripped_at_call",
    "prescreen_p50_ms",
}


async def test_no_rule_mode_lets_a_dangerous_call_run_and_the_prescreen_asks_at_most_the_defaults() -> None:
    result = await attention_modes(load_trace())
    modes = result["modes"]
    assert [(name, expected) for name, expected, actual in outcome_checks(result) if expected != actual] == []
    for mode in ("default", "suggested", "grants"):
        assert modes[mode]["dangerous_unasked"] == 0, mode
        assert modes[mode]["calls"] == result["calls"]
        counted = modes[mode]["dangerous_asked"] + modes[mode]["dangerous_denied_by_rule"]
        assert counted == result["dangerous"], mode  # each dangerous call was asked or denied outright
    default = modes["default"]["prompts_per_100_calls"]
    assert modes["suggested"]["prompts_per_100_calls"] < default
    assert modes["grants"]["prompts_per_100_calls"] <= default / 2
    assert modes["suggested"]["rules_added"] and "not_measured" not in result

    asked = modes["default"]["prompts"]
    for mode in ("prescreen", "prescreen_no_breaker"):
        figures = modes[mode]
        assert set(figures) >= PRESCREEN_KEYS, mode
        assert figures["calls"] == result["calls"]
        # Every prompt is a call the default rules ask; the rules' denials are the rules' alone.
        assert figures["prompts"] <= asked and figures["prompts_per_100_calls"] <= default
        assert figures["dangerous_denied_by_rule"] == modes["default"]["dangerous_denied_by_rule"]
        assert figures["prescreen_requests"] + figures["out_of_scope"] + figures["after_breaker"] == asked
        answered = ("prescreen_allowed", "prescreen_denied", "prescreen_asked", "prescreen_failures")
        assert sum(figures[key] for key in answered) == figures["prescreen_requests"] == figures["requests_served"]
        people = figures["prescreen_asked"] + figures["prescreen_failures"] + figures["out_of_scope"]
        assert figures["prompts"] == people + figures["after_breaker"]
        dangerous = (
            "dangerous_unasked",
            "dangerous_asked",
            "dangerous_denied_by_rule",
            "dangerous_denied_by_prescreen",
        )
        assert sum(figures[key] for key in dangerous) == result["dangerous"], mode
        assert figures["dangerous_unasked"] == figures["dangerous_allowed_by_prescreen"]  # no default rule allows one
        assert figures["safe_denied"] + figures["dangerous_denied_by_prescreen"] == figures["prescreen_denied"]
    breaker = modes["prescreen"]
    assert breaker["prescreen_denied"] <= breaker["deny_limit"] == 3  # once tripped, it is asked no more
    assert breaker["breaker_tripped"] == (breaker["prescreen_denied"] == 3)
    assert breaker["breaker_tripped"] or breaker["after_breaker"] == 0
    assert modes["prescreen_no_breaker"]["after_breaker"] == 0 and not modes["prescreen_no_breaker"]["breaker_tripped"]
    assert result["prescreen"]["deny_limit"] == 3 and result["prescreen"]["timeout_seconds"] == 20
    assert {"run_shell", "write_file", "read_file", "list_dir"} <= set(result["prescreen"]["tools"])
    assert {call["tool"] for call in load_trace() if call["tool"].startswith("mcp__")} <= set(
        result["prescreen"]["tools"]
    )

    section = "\n".join(attention_section(result))
    assert "| grants |" in section and "| prescreen |" in section and "| prescreen_no_breaker |" in section
    assert "Not measured" not in section
