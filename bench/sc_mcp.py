"""Scenario: an approved MCP tool call's latency beside a built-in tool's, in the same run.

One worker with mcp-server-git configured (stdio, started by the worker). Conversations of both
kinds are started and left waiting; then approvals alternate, built-in (`run_shell`, as in the
latency scenario) and MCP (`mcp__git__git_create_branch`), one at a time. Latency is from the
decision sent to the tool activity's ActivityTaskCompleted event, measured the same way for both.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import replace
from typing import Any

from bench import script
from bench.drive import approval_latencies, approve, bounded, new_ids, pending_requests, scalar, wait_pending
from bench.harness import DEFAULT_CACHE, Bench, ran_counts, say
from bench.stats import summary_ms
from doors.control import start_conversation
from workflows.activity_calls import CALL_MCP_TOOL, EXECUTE_TOOL

CONFIG = """ask = ["run_shell"]
[mcp_servers.git]
command = "mcp-server-git"
"""


async def run(bench: Bench, count: int) -> dict[str, Any]:
    settings = bench.settings("mcp")
    repo = settings.workspace_dir / "repo"
    repo.mkdir(parents=True)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.test"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True)
    config = settings.workspace_dir.parent / "tools.toml"
    config.write_text(CONFIG)
    settings = replace(settings, policy_file=str(config))
    bench.start_worker(settings, "ours", DEFAULT_CACHE)
    builtin_ids, mcp_ids = new_ids("builtin", count), new_ids("mcp", count)
    say(f"mcp: starting {count} conversations of each kind")
    texts = {cid: script.user_text(cid) for cid in builtin_ids} | {
        cid: script.mcp_text(cid, str(repo)) for cid in mcp_ids
    }
    await bounded(list(texts), lambda cid: start_conversation(bench.client, settings, texts[cid], cid), 20)
    await wait_pending(settings.approvals_db, 2 * count)
    requests = pending_requests(settings.approvals_db)
    sent: dict[str, float] = {}
    idle_sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
    for pair in zip(builtin_ids, mcp_ids, strict=True):
        for cid in pair:
            sent[cid] = time.time()
            await approve(bench.client, settings, requests[cid])
            while scalar(settings.approvals_db, idle_sql, cid) != "idle":
                await asyncio.sleep(0.002)
    builtin = await approval_latencies(bench.client, builtin_ids, sent, EXECUTE_TOOL)
    mcp = await approval_latencies(bench.client, mcp_ids, sent, CALL_MCP_TOOL)
    bench.stop_workers()
    branches = subprocess.run(["git", "branch", "--format=%(refname:short)"], cwd=repo, capture_output=True, text=True)
    created = {name for name in branches.stdout.split() if name.startswith("mcp-")}
    bench.check("mcp: approved branches created", count, len(created & set(mcp_ids)))
    bench.check("mcp: each approved built-in ran once", count, sum(1 for n in ran_counts(settings).values() if n == 1))
    ours_builtin, ours_mcp = summary_ms(builtin), summary_ms(mcp)
    ratio = {k: round(ours_mcp[k] / ours_builtin[k], 2) for k in ("p50_ms", "p90_ms", "p99_ms")}
    say(f"mcp: builtin p50 {ours_builtin['p50_ms']} ms, mcp p50 {ours_mcp['p50_ms']} ms, ratio {ratio}")
    return {"builtin": ours_builtin, "mcp": ours_mcp, "ratio_mcp_to_builtin": ratio, "approvals_each": count}
