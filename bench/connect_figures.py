"""The Connect benchmark's figures: from what each scenario measured (`results`, keyed as
bench/connect.py's `run` records them) to the result keys (`res`) and the report's rows, setup
text and bars (`out`). No broker, no worker: tests/bench/test_connect_figures.py feeds it runs."""

from __future__ import annotations

from typing import Any, Dict

from connect_params import (
    AUTOSCALE_GOAL_DRAIN,
    AUTOSCALE_GOAL_TASK_S,
    AUTOSCALE_MAX,
    AUTOSCALE_MIN,
    AUTOSCALE_TRICKLE,
    ACK_ON_FETCH,
    KAFKA_DEFAULT_WINDOW,
    LAT_FAST_FRACTIONS,
    LAT_SLOW_FRACTIONS,
    FIXED_FETCH_BYTES,
    ROW_SLEEP,
    TXN_ABORT_EVERY,
    TXN_PARTITIONS,
    TXN_PER_TRANSACTION,
)

# (dt)'s rows in the report: every row's label starts with it
TXN_ROW = "(dt)"
TXN_FIXED_FETCH_ROW = "(dt')"


def val(r: Dict[str, Any], k: str):
    """A measured figure, or None when its run failed."""
    return None if r.get("error") else r.get(k)


def cell(r: Dict[str, Any], k: str, unit: str = "") -> str:
    """A report cell: the run's figure, or why there is none."""
    if r.get("error"):
        return "failed: " + r["error"][:150]
    v = r.get(k)
    return "–" if v is None else f"{v:,}{unit}"


def _rate_ratio(a: Dict[str, Any], b: Dict[str, Any]):
    """a's records/s over b's, or None when either is missing."""
    ra, rb = val(a, "records_per_s"), val(b, "records_per_s")
    return round(ra / rb, 3) if ra and rb else None


def _txn_runs(results: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """(dt)'s rows by runtime; results recorded before (dt) existed have none."""
    older = {"error": "not run (an older bench)"}
    return {runtime: results.get(f"t_{runtime}") or dict(older)
            for runtime in ("classic", "share", "share_fixed_fetch", "java_share")}


def _txn_ran(txn: Dict[str, Dict[str, Any]]) -> bool:
    return any(not r.get("error", "").startswith("not run") for r in txn.values())


def _aborted_written(results: Dict[str, Any], txn: Dict[str, Dict[str, Any]]):
    """Lines of aborted records that (dt)'s sharesink runs wrote, all runs added up (the goal
    is none); None when no run counted them."""
    counts = [r["aborted_written"]
              for runtime in ("share", "share_fixed_fetch")
              for r in results.get(f"t_{runtime}_all") or [txn[runtime]]
              if isinstance(r.get("aborted_written"), int)]
    return sum(counts) if counts else None


def _txn_keys(results: Dict[str, Any], txn: Dict[str, Dict[str, Any]], d_sh: Dict[str, Any],
              put) -> None:
    """(dt)'s result keys: sharesink on the transactional topic against classic on it, against
    itself on the plain topic of (d), and against itself with fixed-size fetches."""
    cl, sh, nf = txn["classic"], txn["share"], txn["share_fixed_fetch"]
    why = sh.get("error") or cl.get("error") or "no result"
    put("connect_txn_overhead", _rate_ratio(sh, cl), why)
    put("connect_txn_vs_plain", _rate_ratio(sh, d_sh), sh.get("error") or d_sh.get("error")
        or "no result")
    put("connect_txn_overhead_fixed_fetch", _rate_ratio(nf, cl), nf.get("error") or why)
    put("connect_txn_adaptive_vs_fixed_fetch", _rate_ratio(sh, nf), nf.get("error") or why)
    put("t_aborted_written", _aborted_written(results, txn),
        sh.get("error") or "no sharesink run counted the lines it wrote")


def _txn_rows(txn: Dict[str, Dict[str, Any]], res: Dict[str, Any]) -> list:
    """(dt) and (dt') in the Connect table."""
    cl, sh, nf = txn["classic"], txn["share"], txn["share_fixed_fetch"]
    return [
        [f"{TXN_ROW} fast sink on a transactional topic ({TXN_PER_TRANSACTION} records per "
         f"transaction, {1 / TXN_ABORT_EVERY:.0%} aborted; read_committed), committed records/s",
         cell(cl, "records_per_s"), cell(sh, "records_per_s"),
         f"**{res.get('connect_txn_overhead')}** ({res.get('connect_txn_vs_plain')} of (d) "
         f"sharesink); aborted records written: {res.get('t_aborted_written')}"],
        [f"{TXN_FIXED_FETCH_ROW} the same, sharesink with "
         + ", ".join(f"`{k}={v}`" for k, v in FIXED_FETCH_BYTES.items())
         + " (every fetch asks for fetch.max.bytes)",
         cell(cl, "records_per_s"), cell(nf, "records_per_s"),
         f"{res.get('connect_txn_overhead_fixed_fetch')} (sized ÷ fixed: "
         f"{res.get('connect_txn_adaptive_vs_fixed_fetch')})"],
    ]


def _txn_setup(cx, txn: Dict[str, Dict[str, Any]]) -> str:
    """The setup text's sentence on (dt), empty when it did not run."""
    if not _txn_ran(txn):
        return ""
    made = {k: f"{v:,}" for k, v in (cx.txn_produced or {}).items()}
    return (f" Rows {TXN_ROW} and {TXN_FIXED_FETCH_ROW}: the FileStream sink of (d), 3 tasks, on "
            f"`bench_txn` ({TXN_PARTITIONS} partitions), which `bench/peers/txn-producer` wrote "
            f"in transactions of {TXN_PER_TRANSACTION} records, records round-robin over the "
            "partitions, one "
            f"transaction in {TXN_ABORT_EVERY} aborted ({made.get('committed', '?')} records "
            f"committed, {made.get('aborted', '?')} aborted); classic with "
            "`consumer.override.isolation.level=read_committed`, sharesink with "
            "`share.consumer.isolation.level=read_committed`; each round runs classic, "
            f"sharesink and {TXN_FIXED_FETCH_ROW} once, after unrecorded warm-up runs on "
            "`bench_txn` (until the brokers' JIT is under a tenth of their CPU), and each row "
            "is its run with the median rate. Rates "
            "count committed records; lines of aborted records are counted apart (the goal is "
            "none).")


def derive(scenarios: str, cx, results: Dict[str, Any], res: Dict[str, Any],
           out: Dict[str, Any]) -> None:
    """Fills `res` and `out` from `results`; `cx` is the run's Connect (its sizes and durations)."""
    share_n = cx.share_tasks
    a_cl, a_sh = results["a_classic"], results["a_share"]
    b_cl, b_sh, b_sh2 = results["b_classic"], results["b_share"], results["b_share_window"]
    c_cl, c_sh = results["c_classic"], results["c_share"]
    d_cl, d_sh = results["d_classic"], results["d_share"]
    d_sh2 = results["d_share_window_2000"]
    # absent from reports of runs before (d'') existed
    d_aof = results.get("d_share_ack_on_fetch") or {"error": "not run (an older bench)"}
    dpin_cl, dpin_sh = results["dpin_classic"], results["dpin_share"]
    txn = _txn_runs(results)

    def put(key, value, reason):
        res[key] = value
        if value is None:
            res[key + "_reason"] = reason

    # (e) latency at fixed rates
    lat_rows = []
    if "e" in scenarios:
        for sink, fracs in (("fast", LAT_FAST_FRACTIONS), ("slow", LAT_SLOW_FRACTIONS)):
            for frac in fracs:
                for runtime in ("classic", "share"):
                    key = f"e_{sink}_{int(frac * 100)}_{runtime}"
                    lat_rows.append((key, results[key]))
    for key, r in lat_rows:
        for q in ("p50", "p99", "p999", "max"):
            res[f"latency_{key[2:]}_{q}_ms"] = val(r, f"{q}_ms")
        res[f"latency_{key[2:]}_kept_up"] = val(r, "kept_up")
    for sink, fracs in (("fast", LAT_FAST_FRACTIONS), ("slow", LAT_SLOW_FRACTIONS)):
        for frac in fracs:
            k = f"{sink}_{int(frac * 100)}"
            cl, sh = res.get(f"latency_{k}_classic_p99_ms"), res.get(f"latency_{k}_share_p99_ms")
            res[f"latency_{k}_p99_share_vs_classic"] = round(sh / cl, 2) if cl and sh else None
    # the goal: sharesink's p99 no higher than classic's at every rate where both keep up
    both = [res[f"latency_{k}_p99_share_vs_classic"]
            for k in (f"{sink}_{int(f * 100)}" for sink, fr in (("fast", LAT_FAST_FRACTIONS),
                                                                ("slow", LAT_SLOW_FRACTIONS))
                      for f in fr)
            if res.get(f"latency_{k}_classic_kept_up") and res.get(f"latency_{k}_share_kept_up")
            and res.get(f"latency_{k}_p99_share_vs_classic") is not None]
    put("latency_p99_share_vs_classic_worst", max(both) if both else None,
        "not run (--scenarios)" if "e" not in scenarios else "no rate at which both kept up")

    # (f) the KIP's headline: many more tasks than partitions
    scale_runs = [(n, results[f"f_{n}"]) for n in cx.scale_tasks] if "f" in scenarios else []
    for n, r in scale_runs:
        for k in ("rows_per_s", "of_ideal", "rss_mib_per_task", "threads_per_task",
                  "broker_connections_per_task", "engine_connections_per_task",
                  "runtime_connections_per_task", "engine_off_heap_mib_per_task",
                  "heap_used_mib"):
            res[f"scale_{n}_tasks_{k}"] = val(r, k)
        res[f"scale_{n}_tasks_rss_mib"] = (val(r, "running") or {}).get("rss_mib")
        res[f"scale_{n}_tasks_machine_busy"] = val(r, "machine_busy")

    # (g) autoscaling: a burst then a trickle, autoscaled against fixed maximum and minimum
    g = {mode: results[f"g_{mode}"] for mode in ("auto", "max", "min")} if "g" in scenarios else {}
    for mode, r in g.items():
        for k in ("drain_s", "task_seconds", "mean_tasks"):
            res[f"autoscale_{mode}_{k}"] = val(r, k)
    ga, gm = g.get("auto", {}), g.get("max", {})
    not_g = "not run (--scenarios)" if "g" not in scenarios else None
    put("autoscale_drain_vs_fixed_max",
        round(val(ga, "drain_s") / val(gm, "drain_s"), 2)
        if val(ga, "drain_s") and val(gm, "drain_s") else None,
        not_g or ga.get("error") or gm.get("error") or "no drain measured")
    put("autoscale_task_seconds_vs_fixed_max",
        round(val(ga, "task_seconds") / val(gm, "task_seconds"), 2)
        if val(ga, "task_seconds") and val(gm, "task_seconds") else None,
        not_g or ga.get("error") or gm.get("error") or "no task-seconds measured")
    steps = (val(ga, "steps") or []) if ga else []
    res["autoscale_reconfigurations"] = len(steps) if ga and not ga.get("error") else None
    gaps = [st["longest_gap_ms"] for st in steps if st.get("longest_gap_ms") is not None]
    res["autoscale_step_longest_gap_ms"] = max(gaps) if gaps else None
    secs = [st["s_to_running"] for st in steps if st.get("s_to_running") is not None]
    res["autoscale_step_s_to_running_max"] = max(secs) if secs else None
    out["autoscale"] = {
        "min": AUTOSCALE_MIN, "max": AUTOSCALE_MAX, "trickle_per_s": AUTOSCALE_TRICKLE,
        "burst": cx.g_burst, "quiet_s": cx.g_quiet, "after_s": cx.g_after,
        "min_cap_s": cx.g_min_cap, "goal_drain": AUTOSCALE_GOAL_DRAIN,
        "goal_task_seconds": AUTOSCALE_GOAL_TASK_S, "runs": g}

    ra, rs = val(a_cl, "rows_per_s"), val(a_sh, "rows_per_s")
    put("connect_beyond_partitions", round(rs / ra, 2) if ra and rs else None,
        a_sh.get("error") or a_cl.get("error") or "no rows")
    put("connect_stalled_task_loss", val(b_sh, "loss"), b_sh.get("error") or "no rows")
    res["connect_stalled_task_loss_classic"] = val(b_cl, "loss")
    res["connect_stalled_task_loss_window_2000"] = val(b_sh2, "loss")
    put("connect_task_change_gap_ms_share", val(c_sh, "gap_ms"), c_sh.get("error") or "no rows")
    put("connect_task_change_gap_ms_classic", val(c_cl, "gap_ms"), c_cl.get("error") or "no rows")
    fd, fs = val(d_cl, "records_per_s"), val(d_sh, "records_per_s")
    put("connect_overhead", round(fs / fd, 3) if fd and fs else None,
        d_sh.get("error") or d_cl.get("error") or "no result")
    fs2 = val(d_sh2, "records_per_s")
    res["connect_overhead_window_2000"] = round(fs2 / fd, 3) if fd and fs2 else None
    fa = val(d_aof, "records_per_s")
    res["connect_overhead_ack_on_fetch"] = round(fa / fd, 3) if fd and fa else None
    res["connect_d_ack_on_fetch_vs_ack_first"] = round(fa / fs, 3) if fs and fa else None
    pd, ps = val(dpin_cl, "records_per_s"), val(dpin_sh, "records_per_s")
    res["connect_overhead_worker_own_core"] = round(ps / pd, 3) if pd and ps else None
    _txn_keys(results, txn, d_sh, put)

    out["setup"] = (
        "One Connect worker (distributed, Kafka 4.4.0), "
        + ("one broker" if cx.c.brokers == 1 else
           f"{cx.c.brokers} brokers (replication factor {cx.c.replication}, min ISR 2)")
        + ", PostgreSQL "
        f"{cx.pg_version} (harness: fsync off, synchronous_commit off). Slow sink = Debezium JDBC "
        "sink 3.6.0 (unmodified) into PostgreSQL, one "
        "record per put (`max.poll.records=1` for both runtimes; sharesink also "
        "`share.acquire.mode=record_limit`), latency injected by a PostgreSQL `BEFORE INSERT` "
        f"trigger running `pg_sleep({ROW_SLEEP})` per row, so each put takes ~20 ms plus the "
        "sink's work; rows carry `clock_timestamp()` of their INSERT, and rates and gaps come "
        "from those. Topic `bench_slow`: 3 partitions. Fast sink = Kafka's FileStream sink "
        "(connect-file 4.3.1) on `bench_fast` (3 partitions, 11-byte lines). Rows (a) to (d) are sharesink "
        "with its defaults on a broker with Kafka's defaults: the connector sets the group's "
        "record-lock window to the broker's group maximum "
        "(`group.share.max.partition.max.record.locks`, 4000 records per share-partition), so "
        "`share.commit.max.records` is derived as 2000, and `share.commit.min.interval.ms` is "
        "10 ms. Rows (b') and (d') are the same with "
        + ", ".join(f"`{k}={v}`" for k, v in KAFKA_DEFAULT_WINDOW.items())
        + ", Kafka's default window (`group.share.partition.max.record.locks`) and sharesink's "
        "default before it set the maximum. Every run is a fresh connector and group reading from "
        "the start. Before (d), "
        f"one classic and {cx.warm_share} sharesink runs, not recorded as (d), warm the broker "
        "and the worker up (their figures are in the findings); (d) itself is "
        + (f"{cx.fast_pairs} classic and {cx.fast_pairs} sharesink runs, alternating, each "
           "reported by its run with the median rate (every run's rate is in the findings)."
           if cx.fast_pairs > 1 else "one classic and one sharesink run.")) + _txn_setup(cx, txn)
    out["rows"] = [
        [f"(a) slow sink, rows/s (second half of a {cx.run_a} s run)",
         f"{cell(a_cl, 'rows_per_s')} (tasks.max=3)", f"{cell(a_sh, 'rows_per_s')} ({share_n} tasks)",
         f"**{res.get('connect_beyond_partitions')}×**"],
        [f"(b) one task stalled {cx.stall} s: rows/s before → during",
         f"{cell(b_cl, 'rows_per_s_before')} → {cell(b_cl, 'rows_per_s_during_stall')} (loss "
         f"{cell(b_cl, 'loss')})",
         f"{cell(b_sh, 'rows_per_s_before')} → {cell(b_sh, 'rows_per_s_during_stall')} (loss "
         f"{cell(b_sh, 'loss')}"
         + (f"; the median of {len(b_sh['runs'])} stalls: "
            + ", ".join(str(x.get("loss")) for x in b_sh["runs"]) if b_sh.get("runs") else "")
         + ")",
         f"loss **{res.get('connect_stalled_task_loss')}** (1/N = {1 / share_n:.3f})"],
        ["(b') the same, sharesink with "
         + ", ".join(f"`{k}={v}`" for k, v in KAFKA_DEFAULT_WINDOW.items()),
         "",
         f"{cell(b_sh2, 'rows_per_s_before')} → {cell(b_sh2, 'rows_per_s_during_stall')} (loss "
         f"{cell(b_sh2, 'loss')})",
         f"loss {res.get('connect_stalled_task_loss_window_2000')}"],
        ["(c) tasks.max 2 → 3 mid-run: longest interval without a row (median interval)",
         f"{cell(c_cl, 'gap_ms', ' ms')} ({cell(c_cl, 'median_gap_ms', ' ms')})",
         f"{cell(c_sh, 'gap_ms', ' ms')} ({cell(c_sh, 'median_gap_ms', ' ms')})",
         f"share {res.get('connect_task_change_gap_ms_share')} ms, classic "
         f"{res.get('connect_task_change_gap_ms_classic')} ms"],
        [f"(d) fast sink (FileStream), tasks.max=3, {cx.n_fast:,} records: records/s",
         cell(d_cl, "records_per_s"), cell(d_sh, "records_per_s"),
         f"**{res.get('connect_overhead')}**"],
        ["(d') the same, sharesink with "
         + ", ".join(f"`{k}={v}`" for k, v in KAFKA_DEFAULT_WINDOW.items()),
         cell(d_cl, "records_per_s"), cell(d_sh2, "records_per_s"),
         f"{res.get('connect_overhead_window_2000')}"],
        ["(d'') the same, sharesink with "
         + ", ".join(f"`{k}={v}`" for k, v in ACK_ON_FETCH.items())
         + " (acknowledgements on the next ShareFetch)",
         cell(d_cl, "records_per_s"), cell(d_aof, "records_per_s"),
         f"{res.get('connect_overhead_ack_on_fetch')} ({res.get('connect_d_ack_on_fetch_vs_ack_first')}"
         " of (d))"],
        ["(d*) the same as (d), the brokers on core 0 and the worker on core 1",
         cell(dpin_cl, "records_per_s"), cell(dpin_sh, "records_per_s"),
         f"{res.get('connect_overhead_worker_own_core')}"],
        *_txn_rows(txn, res),
        ["worker CPU: (a) ms per row / (d) ms per 1000 records",
         f"{cell(a_cl, 'worker_cpu_ms_per_row')} / {cell(d_cl, 'worker_cpu_ms_per_1000')}",
         f"{cell(a_sh, 'worker_cpu_ms_per_row')} / {cell(d_sh, 'worker_cpu_ms_per_1000')}", ""],
        ["machine CPU busy (both cores) during (a) / (d)",
         f"{cell(a_cl, 'machine_busy')} / {cell(d_cl, 'machine_busy')}",
         f"{cell(a_sh, 'machine_busy')} / {cell(d_sh, 'machine_busy')} (d': "
         f"{cell(d_sh2, 'machine_busy')})", ""],
    ]
    if cx.c.brokers == 1:
        out["rows"] = [r for r in out["rows"] if not r[0].startswith("(d*)")]
    if d_aof.get("error", "").startswith("not run"):
        out["rows"] = [r for r in out["rows"] if not r[0].startswith("(d'')")]
    if not _txn_ran(txn):
        out["rows"] = [r for r in out["rows"]
                       if not r[0].startswith((TXN_ROW, TXN_FIXED_FETCH_ROW))]
    def lat_cell(r):
        if r.get("error"):
            return "failed: " + r["error"][:150]
        kept = "" if r.get("kept_up") else ", **fell behind**"
        each = ""
        if r.get("runs"):
            each = "; p99 of each run " + ", ".join(
                "failed" if x.get("p99_ms") is None else f"{x['p99_ms']}" for x in r["runs"])
        return (f"{r['p50_ms']} / {r['p99_ms']} / {r['p999_ms']} / {r['max_ms']} ms "
                f"({r['achieved_rate']:,.0f}/s sent{kept}{each})")
    def cpu_cell(cl: Dict[str, Any], sh: Dict[str, Any]) -> str:
        # CPU s per million records written, sharesink vs classic; machine busy (both cores)
        if sh.get("broker_cpu_s_per_m") is None or cl.get("broker_cpu_s_per_m") is None:
            return ""
        return (f"broker {sh['broker_cpu_s_per_m']} vs {cl['broker_cpu_s_per_m']}, worker "
                f"{sh.get('worker_cpu_s_per_m')} vs {cl.get('worker_cpu_s_per_m')}; busy "
                f"{sh.get('machine_busy')} vs {cl.get('machine_busy')}")
    out["latency_rows"] = []
    for sink, fracs in (("fast", LAT_FAST_FRACTIONS), ("slow", LAT_SLOW_FRACTIONS)):
        for frac in fracs:
            k = f"{sink}_{int(frac * 100)}"
            cl, sh = results.get(f"e_{k}_classic"), results.get(f"e_{k}_share")
            if not cl or not sh:
                continue
            basis = res["latency_basis"]
            base = basis["fast_records_per_s" if sink == "fast" else "slow_rows_per_s"]
            what = ("FileStream, 3 tasks both" if sink == "fast"
                    else f"JDBC + {ROW_SLEEP * 1000:.0f} ms trigger, classic 3 tasks, "
                         f"sharesink {share_n}")
            out["latency_rows"].append([
                f"{what}: {frac:g} × {base:,.0f}/s", lat_cell(cl), lat_cell(sh),
                f"{res.get(f'latency_{k}_p99_share_vs_classic')}", cpu_cell(cl, sh)])
    out["scale_rows"] = []
    for n, r in scale_runs:
        if r.get("error"):
            out["scale_rows"].append([str(n), "failed: " + r["error"][:200]] + [""] * 7)
            continue
        out["scale_rows"].append([
            str(n), f"{r['rows_per_s']:,} of {r['ideal_rows_per_s']:,} (**{r['of_ideal']}**)",
            f"{r.get('machine_busy')}", f"{(r.get('running') or {}).get('rss_mib')}",
            f"{r.get('heap_used_mib')}", f"{r.get('engine_off_heap_mib')} "
            f"({r.get('engine_off_heap_mib_per_task')} per task)",
            f"{r.get('threads_per_task')}",
            f"{r.get('broker_connections_per_task')} (engine {r.get('engine_connections_per_task')}, "
            f"Connect's clients {r.get('runtime_connections_per_task')})",
            f"{r.get('seconds_to_running')}"])
    out["bars"] = [
        ["(a) slow sink", val(a_cl, "rows_per_s"), val(a_sh, "rows_per_s")],
        ["(b) during stall", val(b_cl, "rows_per_s_during_stall"), val(b_sh, "rows_per_s_during_stall")],
        ["(d) fast sink /100", (val(d_cl, "records_per_s") or 0) / 100,
         (val(d_sh, "records_per_s") or 0) / 100],
    ]
