"""Notifications: how soon a webhook follows a request, and whether a receiver that is down slows
an approval. `python -m bench.notify_latency [--count N]` writes bench/notify_results.md.

Three workers, interleaved one approval at a time as in the latency scenario: no channel, a webhook
channel whose receiver is up, and one whose receiver is down (nothing listens on its port). For
the first: from the request's `created_at` (the workflow's clock) to the webhook's arrival. For all
three: from the decision being sent to the approved tool's result recorded in history.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from bench.devserver import bench_server
from bench.drive import approval_latencies, approve, new_ids, pending_requests, scalar, start_all, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, payload_dir, say
from bench.machine import describe_machine
from bench.script import start_model
from bench.stats import summary_ms
from config.process_exit import leave
from config.settings import Settings
from tests.support.notify_support import WEBHOOK_SECRET, Receiver, verify_webhook
from tests.support.processes import free_port
from workflows.activity_calls import EXECUTE_TOOL

SECRET_ENV = "BENCH_HOOK_SECRET"


def hook_policy(path: Path, port: int) -> str:
    path.write_text(
        f'ask = ["run_shell"]\n[channels.hook]\nkind = "webhook"\nurl = "http://127.0.0.1:{port}/hook"\n'
        f'secret_env = "{SECRET_ENV}"\ngroups = ["*"]\n'
    )
    return str(path)


async def measure(bench: Bench, count: int) -> dict[str, object]:
    os.environ[SECRET_ENV] = WEBHOOK_SECRET  # the workers' environment is this process's
    receiver = Receiver().start()
    plain = bench.settings("plain")
    up = replace(bench.settings("up"), policy_file=hook_policy(bench.root / "up.toml", receiver.port))
    down = replace(bench.settings("down"), policy_file=hook_policy(bench.root / "down.toml", free_port()))
    groups = {"no channel": plain, "receiver up": up, "receiver down": down}
    for settings in groups.values():
        bench.start_worker(settings, "ours", DEFAULT_CACHE)
    ids = {name: new_ids(name.split()[-1], count) for name in groups}
    for name, settings in groups.items():
        await start_all(bench.client, settings, ids[name])
    requests: dict[str, str] = {}
    for settings in groups.values():
        await wait_pending(settings.approvals_db, count)
        requests |= pending_requests(settings.approvals_db)
    sent: dict[str, float] = {}
    idle_sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
    for i in range(count):
        for name, settings in groups.items():
            cid = ids[name][i]
            sent[cid] = time.time()
            await approve(bench.client, settings, requests[cid])
            while scalar(settings.approvals_db, idle_sql, cid) != "idle":
                await asyncio.sleep(0.002)
    latencies = {name: await approval_latencies(bench.client, ids[name], sent, EXECUTE_TOOL) for name in groups}
    created_sql = "SELECT request_id, created_at FROM ui_pending_approvals"
    created = {rid: datetime.fromisoformat(at).timestamp() for rid, at in _rows(up.approvals_db, created_sql)}
    delays = [d.received_at - created[d.json()["request_id"]] for d in receiver.deliveries]
    verified = sum(verify_webhook(d, WEBHOOK_SECRET) for d in receiver.deliveries)
    keys = len({d.headers["idempotency-key"] for d in receiver.deliveries})
    bench.stop_workers()
    receiver.stop()
    return {
        "count": count,
        "approval": {name: summary_ms(values) for name, values in latencies.items()},
        "webhook_after_request": summary_ms(delays),
        "deliveries": len(receiver.deliveries),
        "verified": verified,
        "distinct_keys": keys,
    }


def _rows(db: str | Path, sql: str) -> list[tuple[str, str]]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return [(str(a), str(b)) for a, b in conn.execute(sql)]


def render(result: dict[str, object], machine: str, load: list[float]) -> str:
    approval = result["approval"]
    assert isinstance(approval, dict)
    lines = [
        "# Notification figures",
        "",
        f"Machine: {machine}; load average at the end {load}. n = {result['count']} approvals per group.",
        "",
        "## Approval latency with and without a channel",
        "",
        "From the decision being sent to the approved tool's result recorded in history. The"
        " receiver-down worker keeps retrying its 40 undelivered webhooks meanwhile.",
        "",
        "|  | p50 ms | p90 ms | p99 ms | n |",
        "|---|---|---|---|---|",
    ]
    for name, figures in approval.items():
        lines.append(f"| {name} | {figures['p50_ms']} | {figures['p90_ms']} | {figures['p99_ms']} | {figures['n']} |")
    hook = result["webhook_after_request"]
    assert isinstance(hook, dict)
    lines += [
        "",
        "## Webhook after the request",
        "",
        "From the request's `created_at` to the signed webhook's arrival at a local receiver. All the"
        " conversations of the three groups start together, so this is the delay under that burst (each"
        " notification waits behind the burst's projection writes and model calls).",
        "",
        "| p50 ms | p90 ms | p99 ms | n |",
        "|---|---|---|---|",
        f"| {hook['p50_ms']} | {hook['p90_ms']} | {hook['p99_ms']} | {hook['n']} |",
        "",
        f"Deliveries: {result['deliveries']} for {result['count']} requests, {result['verified']} with a valid"
        f" signature, {result['distinct_keys']} distinct idempotency keys.",
        "",
    ]
    return "\n".join(lines)


async def main(count: int, out: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-notify-"))
    server = bench_server(root / "temporal.log").start()
    model = start_model()
    try:
        client = await server.client(Settings(payload_store=str(payload_dir(root))))
        bench = Bench(root=root, server=server, client=client, model=model)
        result = await measure(bench, count)
    finally:
        model.stop()
        server.stop()
    machine = describe_machine()
    about = f"{machine['nproc']} cores ({machine['cpu_model']}), Python {machine['python']}"
    about += f", temporalio {machine['temporalio']}"
    out.write_text(render(result, about, [round(x, 2) for x in os.getloadavg()]))
    say(f"wrote {out}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--out", type=Path, default=Path("bench/notify_results.md"))
    args = parser.parse_args()
    asyncio.run(main(args.count, args.out))
    leave(0)
