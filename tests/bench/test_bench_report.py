"""The request-latency table shows the bare child beside ours and the floor, from results.json;
the latency section says how the bench waited while it timed ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report import _latency, _recovery, _request_latency
from bench.run import merged


def _times(p50: float) -> dict[str, float]:
    return {"p50_ms": p50, "p90_ms": p50 + 1, "p99_ms": p50 + 2, "n": 100}


def _ratio(p50: float) -> dict[str, float]:
    return {"p50_ms": p50, "p90_ms": p50, "p99_ms": p50}


def test_the_bare_child_gets_its_row_its_ratio_and_its_phase_column() -> None:
    results: dict[str, Any] = {
        "child": _times(47.0),
        "nexus": _times(48.0),
        "bare": _times(38.0),
        "floor": _times(25.0),
        "ratio_child": _ratio(1.88),
        "ratio_nexus": _ratio(1.92),
        "ratio_bare": _ratio(1.52),
        "ratio_child_to_bare": _ratio(1.24),
        "ratio_nexus_to_bare": _ratio(1.26),
        "p50_ratio_child_per_block": [1.9],
        "p50_ratio_nexus_per_block": [1.9],
        "p50_ratio_bare_per_block": [1.5],
        "child_request_closed": _times(18.0),
        "nexus_request_closed": _times(18.0),
        "phases": {
            "child": {"request.closed": 18.2},
            "nexus": {"request.closed": 18.3},
            "bare": {"request.closed": 11.8},
            "floor": {"caller.task started": 4.8},
        },
    }
    page = "\n".join(_request_latency(results))
    assert "| bare child: waits on a signal, returns | 38.0 | 39.0 | 40.0 | 100 |" in page
    assert "| bare child / floor | 1.52x | 1.52x | 1.52x |  |" in page
    assert "| child / bare child | 1.24x |" in page and "| nexus / bare child | 1.26x |" in page
    assert "| step | child | Nexus | bare child | floor |" in page
    assert "| request.closed | 18.2 | 18.3 | 11.8 |  |" in page
    # A run from before the bare child existed renders as it did.
    del results["bare"], results["phases"]["bare"]
    older = "\n".join(_request_latency(results))
    assert "| bare child" not in older and "| step | child | Nexus | floor |" in older


def test_the_latency_section_says_how_long_the_bench_stayed_quiet_when_the_run_recorded_it() -> None:
    results = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results.json").read_text())
    latency = dict(results["scenarios"]["latency"])
    latency["quiet_ms"] = 250
    page = "\n".join(_latency(latency, None))
    assert "ours for 250 ms before it reads the read model" in page
    del latency["quiet_ms"]  # a run from before the quiet wait renders as it did
    assert "before it reads the read model" not in "\n".join(_latency(latency, None))


def _drain(rate: float, tasks: float, cpu: dict[str, float], timed_out: float) -> dict[str, Any]:
    return {
        "approvals": 1000,
        "workflows": 1000,
        "workers_start_seconds": 1.5,
        "seconds_to_send_all_decisions": 40.0,
        "seconds_to_send_all_signals": 1.3,
        "seconds_until_every_turn_complete": 50.0,
        "seconds_until_every_one_ran": 31.0,
        "approvals_per_second": rate,
        "tools_run": 1000,
        "model_requests": 2000,
        "assistant_messages": 2000,
        "tasks_per_approval": tasks,
        "cpu_ms_per_approval": cpu,
        "share_timed_out_on_the_killed_worker": timed_out,
    }


def test_the_recovery_section_shows_each_drains_cpu_and_its_timed_out_share() -> None:
    ours = {"temporal": 31.0, "postgresql": 0.0, "workers": 37.0, "bench": 2.5, "total": 70.5}
    floor = {"temporal": 16.0, "postgresql": 0.0, "workers": 12.5, "bench": 1.0, "total": 29.5}
    results: dict[str, Any] = {
        "workers": 2,
        "backends": {"sqlite": _drain(20.0, 7.0, ours, 0.0)},
        "floor": _drain(32.0, 3.0, floor, 1.0),
        "ratio_to_floor": {"sqlite": 0.62},
        "task_ratio_to_floor": {"sqlite": 0.43},
        "cpu_ratio_to_floor": {"sqlite": 0.42},
    }
    page = "\n".join(_recovery(results))
    assert "| sqlite | 31.0 | 0.0 | 37.0 | 2.5 | 70.5 | 0.0 |" in page
    assert "| floor | 16.0 | 0.0 | 12.5 | 1.0 | 29.5 | 1.0 |" in page
    assert "(cpu_ratio_to_floor): sqlite 0.42." in page
    results["cpu_ratio_to_turn_floor"] = {"sqlite": 0.66}
    page = "\n".join(_recovery(results))
    assert "(cpu_ratio_to_floor): sqlite 0.42; over the turn floor's (cpu_ratio_to_turn_floor): sqlite 0.66." in page
    # A run from before the CPU was read renders as it did.
    del results["cpu_ratio_to_floor"]
    assert "CPU milliseconds" not in "\n".join(_recovery(results))
    assert "replay_cpu_ms_before_the_decision" not in page, "nor a run from before the replay was timed"
    for drain, events, ms in ((results["backends"]["sqlite"], 60, 16.9), (results["floor"], 5, 3.1)):
        drain |= {"history_events_before_the_decision": events, "replay_cpu_ms_before_the_decision": ms}
    page = "\n".join(_recovery(results))
    assert "rounds of ten replays): sqlite 60 events, **16.9** ms;" in page
    assert "floor 5 events, **3.1** ms." in page


def test_a_turn_floor_drained_after_each_backend_shows_as_one_drain_each() -> None:
    ours = {"temporal": 31.0, "postgresql": 0.0, "workers": 37.0, "bench": 2.5, "total": 70.5}
    turn = {"temporal": 26.0, "postgresql": 0.0, "workers": 20.0, "bench": 2.0, "total": 48.0}
    after_pg = {**turn, "total": 60.0}
    results: dict[str, Any] = {
        "workers": 2,
        "backends": {"sqlite": _drain(20.0, 5.0, ours, 0.0), "postgresql": _drain(18.0, 5.0, ours, 0.0)},
        "floor": _drain(32.0, 3.0, turn, 1.0),
        "floor_turn_after": {"sqlite": _drain(24.0, 5.0, turn, 0.5), "postgresql": _drain(21.0, 5.0, after_pg, 0.5)},
        "ratio_to_turn_floor": {"sqlite": 0.83, "postgresql": 0.86},
        "cpu_ratio_to_floor": {"sqlite": 0.68, "postgresql": 0.68},
        "cpu_ratio_to_turn_floor": {"sqlite": 0.68, "postgresql": 0.85},
    }
    page = "\n".join(_recovery(results))
    assert "| turn floor after sqlite | 26.0 | 0.0 | 20.0 | 2.0 | 48.0 | 0.5 |" in page
    assert "| turn floor after postgresql | 26.0 | 0.0 | 20.0 | 2.0 | 60.0 | 0.5 |" in page
    assert "| turn floor (a signal, the same activity, one model call) after postgresql | 1,000 |" in page
    assert "drained right after each backend's drain and compared with it;" in page
    assert "(ratio_to_turn_floor): sqlite **0.83**, postgresql **0.86**." in page


def test_a_rerun_replaces_its_scenarios_checks_and_leaves_one_line_per_check(tmp_path: Path) -> None:
    def check(name: str, actual: int) -> dict[str, Any]:
        return {"name": name, "expected": 1, "actual": actual, "ok": actual == 1}

    run = {"started_at": "t", "mode": "full", "duration_seconds": 1.0, "machine": {}, "settings": []}
    earlier = {
        **run,
        "scenarios": {"recovery": {"old": True}, "inbox": {"kept": True}},
        "load_average": {},
        "checks": [
            check("recovery (sqlite): ran once", 0),
            check("recovery (sqlite): ran once", 0),
            check("latency_extstore(threshold=0): ran once", 1),
            check("inbox (sqlite): listed", 0),
            check("inbox (sqlite): listed", 1),
        ],
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(earlier))
    rerun = {
        **run,
        "scenarios": {"recovery": {"new": True}},
        "load_average": {},
        "checks": [check("recovery (sqlite): ran once", 1)],
    }
    out = merged(path, rerun, ["recovery"])
    assert out["scenarios"] == {"recovery": {"new": True}, "inbox": {"kept": True}}
    assert [(c["name"], c["actual"]) for c in out["checks"]] == [
        ("latency_extstore(threshold=0): ran once", 1),
        ("inbox (sqlite): listed", 1),
        ("recovery (sqlite): ran once", 1),
    ]
