"""The bench harness still proves what it claims: a five-conversation recovery run on each backend
(two new workers after the SIGKILL), counts only.

No timing is asserted here; `make bench` reports the figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import sc_history, sc_parked, sc_recovery
from bench.devserver import bench_server
from bench.harness import Bench, payload_dir
from bench.script import start_model
from config.settings import Settings

# The bench's own proof (it runs the product whole, on both backends): in `make test-scale`.
pytestmark = pytest.mark.long


@pytest.mark.timeout(600)  # a hang guard: 163 s in a loaded CI run of `make test-scale`
async def test_recovery_after_sigkill_runs_each_tool_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc_parked, "SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(sc_parked, "RSS_SAMPLES", 1)
    # One backend here: the drain is the same code on both, and `make bench` runs PostgreSQL's.
    monkeypatch.setattr(sc_recovery, "BACKENDS", ("sqlite",))
    # One floor too: each drain waits out the killed worker's sticky queue; `make bench` drains the turn floor.
    monkeypatch.setattr(sc_recovery, "FLOORS", {"floor": sc_recovery.FLOORS["floor"]})
    server = bench_server(tmp_path / "temporal.log").start()
    model = start_model()
    bench = Bench(
        root=tmp_path,
        server=server,
        client=await server.client(Settings(payload_store=str(payload_dir(tmp_path)))),
        model=model,
    )
    try:
        result = await sc_recovery.run(bench, 5)
    finally:
        bench.stop_workers()
        bench.close()
        model.stop()
        server.stop()
    assert [(c.name, c.expected, c.actual) for c in bench.checks if not c.ok] == []
    assert len(bench.checks) == 5, "four counts for the backend, one for the floor"
    for backend in sc_recovery.BACKENDS:
        done = result["backends"][backend]
        assert (done["tools_run"], done["model_requests"], done["workers"]) == (5, 10, 2), backend
        assert result["ratio_to_floor"][backend] > 0
        assert done["tasks_per_approval"] > result["floor"]["tasks_per_approval"], backend
    assert (result["floor"]["workflows"], result["floor"]["workers"]) == (5, 2)
    # Each drain's CPU, per process, read while its workers ran (no PostgreSQL in this run).
    for drain in (*result["backends"].values(), result["floor"]):
        cpu = drain["cpu_ms_per_approval"]
        assert cpu["temporal"] > 0 and cpu["workers"] > 0 and cpu["postgresql"] == 0.0, cpu
        parts = sum(ms for part, ms in cpu.items() if part != "total")
        assert abs(cpu["total"] - parts) <= 0.2, cpu  # the parts are rounded to 0.1 each
        assert 0.0 <= drain["share_timed_out_on_the_killed_worker"] <= 1.0
    ratio = result["cpu_ratio_to_floor"]["sqlite"]
    assert ratio == round(result["floor"]["cpu_ms_per_approval"]["total"] / done["cpu_ms_per_approval"]["total"], 2)
    # The floor's signal costs a workflow task, its one activity, and the task that completes it.
    assert result["floor"]["tasks_per_approval"] == 3
    # What a new worker replayed before each decision: ours a whole turn up to its approval, the
    # floor its start alone; both replayed (a failure would raise) and both cost CPU.
    ours_replay, floor_replay = done, result["floor"]
    assert floor_replay["history_events_before_the_decision"] < 10 < ours_replay["history_events_before_the_decision"]
    assert 0 < floor_replay["replay_cpu_ms_before_the_decision"] < ours_replay["replay_cpu_ms_before_the_decision"]


async def test_history_scenario_counts_what_leaves_the_history(tmp_path: Path) -> None:
    server = bench_server(tmp_path / "temporal.log").start()
    model = start_model()
    client = await server.client(Settings(payload_store=str(payload_dir(tmp_path))))
    bench = Bench(root=tmp_path, server=server, client=client, model=model)
    try:
        result = await sc_history.run(bench, 6, payload_threshold=8192)
    finally:
        bench.stop_workers()
        model.stop()
        server.stop()
    assert [(c.name, c.expected, c.actual) for c in bench.checks if not c.ok] == []
    assert len(bench.checks) == 3
    rows = result["per_turn"]
    assert rows[0]["external_bytes"] == 0  # a short transcript stays inline
    assert all(row["external_bytes"] > 8192 for row in rows[3:])  # then each model input is stored
    assert result["largest_inline_payload_bytes"] < 8192 and result["payload_store_files"] > 0
    # Content-addressed: a turn's store growth is what it added, far less than the payloads it refers to.
    assert sum(row["store_bytes"] for row in rows[3:]) < sum(row["external_bytes"] for row in rows[3:]) / 2
    assert result["store_bytes_per_transcript_byte"] > 0 and result["transcript_kib"] > 6 * 4
    # The fair first tenth starts where the store first held something, after the inline start.
    assert result["store_first_turn_stored"] == 1 + next(i for i, row in enumerate(rows) if row["store_bytes"])
    assert result["store_first_turn_stored"] > 1 and result["store_bytes_per_turn_last_over_first"] > 0
