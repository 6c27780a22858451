"""One scenario at two sizes: a small one in `make test`, the full one under `make test-scale`.

A repeated-scale proof (hundreds of conversations, hundreds of CLI runs) keeps every assertion at
the small size; only the count changes. The full size carries the `scale` marker, which the
default run leaves out (pyproject's addopts) and `make test-scale` selects."""

from __future__ import annotations

from typing import Any

import pytest


def at_scale(argument: str, quick: int, full: int) -> Any:
    """Parametrise `argument` with the quick size, and the full size marked `scale`."""
    return pytest.mark.parametrize(
        argument,
        [
            pytest.param(quick, id=f"{argument}={quick}"),
            pytest.param(full, id=f"{argument}={full}", marks=pytest.mark.scale),
        ],
    )
