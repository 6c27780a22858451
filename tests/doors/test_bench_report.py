"""The request-latency table shows the bare child beside ours and the floor, from results.json;
the latency section says how the bench waited while it timed ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report import _latency, _request_latency


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
