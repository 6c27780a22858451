"""Small statistics over timings: percentiles by linear interpolation, medians of repeats."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99 in milliseconds, rounded for the table."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p90_ms": round(percentile(ms, 90), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "mean_ms": round(statistics.fmean(ms), 2) if ms else float("nan"),
    }


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def mib(n_bytes: float) -> float:
    return round(n_bytes / (1024 * 1024), 1)
