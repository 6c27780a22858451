"""What a fault left behind, counted the same way by the fault suite and by `bench` (scenario
`faults`): how long decisions took to flow again once the fault ended, and what was lost, done
twice or left stuck."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class FaultOutcome:
    fault: str  # e.g. "postgres_restart_immediate", "model_never_answers", "payload_store_full"
    backend: str  # "sqlite", "postgresql", or "-" where the backend plays no part
    seconds_to_recover: float  # from the fault's end until the first decision after it reached its tool
    lost: int  # approvals or decided calls that vanished: no row, no outcome, a tool that never ran
    doubled: int  # decisions applied twice or tools that ran more than once
    stuck: int  # conversations that did not go on (by themselves) within the deadline after the fault

    def figures(self) -> dict[str, float | int]:
        """The bench's keys: faults.KIND.{seconds_to_recover,lost,doubled,stuck}."""
        return {k: v for k, v in asdict(self).items() if k not in ("fault", "backend")}

    def assert_clean(self) -> None:
        assert (self.lost, self.doubled, self.stuck) == (0, 0, 0), self
