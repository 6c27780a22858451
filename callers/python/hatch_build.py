"""Where the wheel takes `durable_approvals` from: the service's folder two levels up, where the
package lives in a checkout (a path or git URL install, `python -m build --wheel`), or the copy an
sdist of this folder carries beside this file (`python -m build` builds the wheel from that)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CallerPackage(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        in_checkout = root.parent.parent / "durable_approvals"
        source = in_checkout if (in_checkout / "__init__.py").is_file() else root / "durable_approvals"
        build_data["force_include"][str(source)] = "durable_approvals"
