"""Ratios (results.json keys), docs/benchmarks/RESULTS.md and the PNG chart."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any, Dict, List, Optional

KEYS = ["engine_vs_java_share_1m", "engine_vs_java_share_4m", "engine_vs_krafka_1m",
        "engine_vs_franz_1m", "engine_vs_franz_4m", "engine_vs_classic_ceiling", "engine_cpu_per_record_vs_java", "jni_vs_engine",
        "connect_beyond_partitions", "connect_stalled_task_loss",
        "connect_task_change_gap_ms_share", "connect_task_change_gap_ms_classic",
        "connect_overhead", "latency_p99_share_vs_classic_worst"]

# the record-lock window sharesink's defaults give on a broker with Kafka's limits
SHARE_DEFAULT_WINDOW = 4000

TARGETS = {
    "engine_vs_java_share_1m": ">= 4 (issue 17; >= 3 issue 6)",
    "engine_vs_java_share_4m": ">= 4 (issue 17; >= 3 issue 6)",
    "engine_vs_krafka_1m": "> 1",
    "engine_vs_franz_1m": "> 1",
    "engine_vs_franz_4m": "> 1",
    "engine_vs_classic_ceiling": ">= 0.6",
    "engine_cpu_per_record_vs_java": "<= 1/3",
    "jni_vs_engine": ">= 0.9 (issue 17; >= 0.85 before)",
    "connect_beyond_partitions": ">= 3.5",
    "connect_stalled_task_loss": "<= 1/N (N = tasks)",
    "connect_task_change_gap_ms_share": "< 1000",
    "connect_task_change_gap_ms_classic": "(reference)",
    "connect_overhead": ">= 1.0 (issue 17; >= 0.9 issue 6)",
    "latency_p99_share_vs_classic_worst": "<= 1 (at every rate where both keep up)",
}


def _jni_thread_split(runs: List[Dict[str, Any]], engine_alone: Optional[float]) -> str:
    """Where the JNI bench's CPU went, by thread group, mean over its runs ('' when unmeasured)."""
    splits = [r["cpu_s_per_m_by_thread"] for r in runs
              if r.get("client") == "jni" and r.get("cpu_s_per_m_by_thread")]
    if not splits:
        return ""
    mean = {k: round(sum(s.get(k, 0.0) for s in splits) / len(splits), 3) for k in splits[0]}
    return (f" By thread (CPU s per million records, mean of {len(splits)} JNI runs, from the "
            f"first record): the native runtime's threads (fetch, decode, acks) {mean['engine']}, "
            f"the polling thread (the batch layout written out of the engine, the byte[] copies, "
            f"the acks packed) {mean['polling']}, the JVM's GC {mean['gc']}, its JIT "
            f"{mean['jit']}, the rest {mean['other']}." + (
                " The native runtime's threads alone used more CPU per record inside the JVM than "
                "the whole engine bench, its consumer loop included; in the perf profile of "
                "2026-12-03 below the two were equal (1,403 samples against 1,432), so this part "
                "moves with the load on the shared cores."
                if engine_alone is not None and mean["engine"] > engine_alone else ""))


def _jni_without_jvm(res: Dict[str, Any], copy: Optional[Dict], jni: Dict) -> str:
    """What the engine-copy runs (the JNI path without a JVM) say about the JNI gap."""
    ratio = res.get("engine_copy_vs_engine")
    if copy is None or ratio is None:
        return ""
    txt = (f" The engine polled from a plain thread that copies every key and value out (the "
           f"JNI path without the JVM) made {ratio} of the engine's rate (runs "
           f"{_fmt(copy.get('records_per_s_min'))}–{_fmt(copy.get('records_per_s_max'))}) with "
           f"{_fmt(copy.get('cpu_s_per_m_steady'))} CPU s per million records, and JNI made "
           f"{res.get('jni_vs_engine_copy')} of it with {_fmt(jni.get('cpu_s_per_m_steady'))}.")
    if ratio >= 0.95:
        txt += (" So handing batches to a thread outside the runtime and copying them cost "
                "little rate by themselves; what JNI adds is the JVM's own CPU (the polling "
                "thread's batch layout and byte[] copies, the JIT), taken from the two cores on "
                "which the broker answers each fetch.")
    else:
        txt += (f" So of the gap, handing each batch to a thread outside the runtime and copying "
                f"its records out (what any caller in another runtime does) took {1 - ratio:.2f} "
                f"of the engine's rate, and the JVM itself (its polling thread's batch layout and "
                f"byte[] copies, the JIT) the rest: the CPU both take comes from the two cores on "
                f"which the broker answers each fetch.")
    return txt


def _find(runs: List[Dict], client: str, members: int, size: int = 100) -> Optional[Dict]:
    for r in runs:
        if r.get("client") == client and r.get("members") == members and \
                r.get("record_size") == size and "error" not in r:
            return r
    return None


def _ratio(a: Optional[float], b: Optional[float], nd: int = 2) -> Optional[float]:
    if a is None or b is None or not b:
        return None
    return round(a / b, nd)


def _set(res: Dict, key: str, value: Any, reason: str) -> None:
    res[key] = value
    if value is None:
        res[key + "_reason"] = reason
    else:
        res.pop(key + "_reason", None)


def summarize(raw: List[Dict]) -> List[Dict]:
    """One row per (client, members, record size): the run with the median records/s, with
    the spread of the rounds."""
    groups: Dict[tuple, List[Dict]] = {}
    order: List[tuple] = []
    for r in raw:
        k = (r.get("client"), r.get("members"), r.get("record_size"))
        if k not in groups:
            order.append(k)
        groups.setdefault(k, []).append(r)
    out = []
    for k in order:
        ok = sorted((r for r in groups[k] if "error" not in r), key=lambda r: r["records_per_s"])
        if not ok:
            out.append(groups[k][-1])
            continue
        med = dict(ok[(len(ok) - 1) // 2] if len(ok) % 2 == 0 else ok[len(ok) // 2])
        med["rounds"] = len(groups[k])
        med["failed_rounds"] = len(groups[k]) - len(ok)
        med["records_per_s_min"] = ok[0]["records_per_s"]
        med["records_per_s_max"] = ok[-1]["records_per_s"]
        out.append(med)
    return out


def derive(res: Dict[str, Any]) -> None:
    res["consumer_summary"] = summarize(res.get("consumer_runs", []))
    res["jni_summary"] = summarize(res.get("jni_runs", []))
    runs = res["consumer_summary"]
    parts = set(res.get("parts", []))

    def why(client, members, size=100, part="consumers"):
        if part not in parts:
            return f"part '{part}' not run (--parts)"
        for r in runs + res.get("jni_runs", []):
            if r.get("client") == client and r.get("members") == members and \
                    r.get("record_size") == size and "error" in r:
                return f"{client} {members}m failed: {r['error'][:300]}"
        return f"no {client} {members}-member result"

    def rps(client, members, size=100):
        r = _find(runs, client, members, size)
        return r and r.get("records_per_s")

    e1, e4, j1, j4, k1 = rps("engine", 1), rps("engine", 4), rps("java", 1), rps("java", 4), \
        rps("krafka", 1)
    f1, f4 = rps("franz", 1), rps("franz", 4)
    cl = rps("classic", 1)
    _set(res, "engine_vs_java_share_1m", _ratio(e1, j1), why("java", 1) if e1 else why("engine", 1))
    _set(res, "engine_vs_java_share_4m", _ratio(e4, j4), why("java", 4) if e4 else why("engine", 4))
    _set(res, "engine_vs_krafka_1m", _ratio(e1, k1), why("krafka", 1) if e1 else why("engine", 1))
    _set(res, "engine_vs_franz_1m", _ratio(e1, f1), why("franz", 1) if e1 else why("engine", 1))
    _set(res, "engine_vs_franz_4m", _ratio(e4, f4), why("franz", 4) if e4 else why("engine", 4))
    _set(res, "engine_vs_classic_ceiling", _ratio(e1, cl),
         why("classic", 1) if e1 else why("engine", 1))
    res["engine_4m_vs_classic_ceiling"] = _ratio(e4, cl)
    ec = (_find(runs, "engine", 1) or {}).get("cpu_s_per_m_steady")
    jc = (_find(runs, "java", 1) or {}).get("cpu_s_per_m_steady")
    _set(res, "engine_cpu_per_record_vs_java", _ratio(ec, jc, 3),
         why("java", 1) if ec else why("engine", 1))
    ecp = (_find(runs, "engine", 1) or {}).get("cpu_s_per_m_process")
    jcp = (_find(runs, "java", 1) or {}).get("cpu_s_per_m_process")
    res["engine_cpu_per_record_vs_java_process"] = _ratio(ecp, jcp, 3)
    res["engine_vs_java_share_1m_incl_start"] = _ratio(
        (_find(runs, "engine", 1) or {}).get("records_per_s_incl_start"),
        (_find(runs, "java", 1) or {}).get("records_per_s_incl_start"))

    jr = res["jni_summary"]
    je = _find(jr, "engine", 1)
    jj = _find(jr, "jni", 1)
    _set(res, "jni_vs_engine", _ratio(jj and jj["records_per_s"], je and je["records_per_s"]),
         why("jni", 1, part="jni") if je else why("engine", 1, part="jni"))
    # the JNI path without the JVM: what crossing threads and copying records costs by itself
    jc = _find(jr, "engine-copy", 1)
    res["engine_copy_vs_engine"] = _ratio(jc and jc["records_per_s"], je and je["records_per_s"])
    res["jni_vs_engine_copy"] = _ratio(jj and jj["records_per_s"], jc and jc["records_per_s"])
    # Connect keys are set by connect.py; make sure each exists with a reason.
    for k in KEYS:
        if k not in res:
            _set(res, k, None, res.get("connect_reason", "not measured in this run"))


# ---------------------------------------------------------------------------------------------
# RESULTS.md


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        s = f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    elif isinstance(v, int):
        s = f"{v:,}"
    else:
        s = str(v)
    return s + unit


def write(res: Dict[str, Any], out: Path, docs: Path) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    m = res.get("machine", {})
    L: List[str] = []
    L.append("# sharesink benchmarks")
    L.append("")
    brokers = res.get("brokers", 1)
    flags = (" --quick" if res.get("mode") == "quick" else "") + \
        (f" --brokers {brokers}" if brokers != 1 else "")
    where = "target/bench" + (f"/brokers-{brokers}" if brokers != 1 else "")
    cluster = ("one local broker" if brokers == 1 else
               f"a local cluster of {brokers} brokers (replication factor {min(brokers, 3)}, "
               "min.insync.replicas 2, leaders spread)")
    L.append(f"Generated by `scripts/bench.sh{flags}` "
             f"on {m.get('date_utc', '?')} ({res.get('mode')} mode, {res.get('elapsed_s', '?')} s). "
             f"Every figure comes from one run against {cluster}; every client runs alone. "
             f"Raw figures: `{where}/results.json`; client logs: `{where}/logs/`.")
    L.append("")
    L.append("**Machine:** " + f"{m.get('nproc')} cores ({m.get('cpu_model')}), {m.get('memory')} RAM, "
             f"Linux {m.get('kernel')}; load average "
             f"{_load(m.get('load_avg_at_start'))} at start, {_load(m.get('load_avg_at_end'))} at end"
             + (" — **the machine was shared and busy: figures are noisy**"
                if (m.get('load_avg_at_start') or [0])[0] > 0.5 * (m.get('nproc') or 1) else "") + ".")
    L.append("")
    L.append(f"**Versions:** Kafka {m.get('kafka')}, {m.get('java')}, {m.get('rustc')}, krafka "
             f"{m.get('krafka')}, franz-go {m.get('franz_go', '?')}, Python {m.get('python')}, sharesink at `{m.get('git')}`.")
    L.append("")
    if res.get("failure"):
        L.append("**The run failed part-way**; what was measured before is below.")
        L.append("")
    L.append("## Headline ratios (targets from issues 6 and 17)")
    L.append("")
    L.append("| key | value | target | |")
    L.append("|---|---|---|---|")
    for k in KEYS:
        v = res.get(k)
        L.append(f"| `{k}` | {_fmt(v) if v is not None else 'not run: ' + str(res.get(k + '_reason', '?'))[:300]} "
                 f"| {TARGETS[k]} | {_verdict(k, v, res)} |")
    L.append("")
    runs = res.get("consumer_summary", [])
    if runs:
        L.append("## 1. Share consumers on one topic (6 partitions)")
        L.append("")
        L.append("Same settings for every client: `fetch.max.bytes` 1 MiB (the Java tool's "
                 "`--fetch-size` default), `max.poll.records` 500 (ShareFetch MaxRecords and "
                 "BatchSize), broker defaults (lock window 2000 records per share-partition), "
                 "each run a fresh share group with `share.auto.offset.reset=earliest` set first. "
                 "Acknowledgement: engine, krafka and franz-go explicit ACCEPT; the Java tool implicit "
                 "(the same ACCEPT on the wire). The classic consumer (`ConsumerPerformance`, one "
                 "consumer, `fetch.max.bytes` 1 MiB) is the ceiling. One unrecorded engine pass "
                 "warms the broker up per topic; each round then starts with a different client "
                 "(the first run after the warm-up costs the broker more CPU per record), and a "
                 "row is the round with the median records/s. JVM clients (Java tools, JNI bench) "
                 "run with `-Xms512M -XX:+AlwaysPreTouch` so that first-touch page faults on the "
                 "heap fall before the measured window; the JNI bench also warms its JIT up on a "
                 "synthetic batch before it joins.")
        L.append("")
        L.append("Clocks: **steady** = first record to last record (engine/krafka/franz-go/JNI: "
                 "their own clock; Java share tool: its first per-consumer report at a 100 ms interval to "
                 "its end time; classic: the tool's `fetch.time.ms`, which excludes the join). "
                 "**incl. start** = the whole process lifetime (JVM start, join, close), records "
                 "divided by wall time. CPU: **steady** = the process's utime+stime (/proc, "
                 "sampled every 50 ms, or getrusage inside the Rust benches) over the steady "
                 "interval; **process** = utime+stime of the whole process from wait4(). "
                 "Broker CPU = the broker process's utime+stime over the run.")
        L.append("")
        L.append("| record | client | members | records | records/s steady | MB/s | records/s incl. start | join s | CPU s/M steady | CPU s/M process | broker CPU s/M |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in runs:
            if "error" in r:
                L.append(f"| {r.get('record_size')} B | {r['client']} | {r['members']} | failed: "
                         f"{str(r['error'])[:200]} | | | | | | | |")
                continue
            L.append(f"| {r['record_size']} B | {r['client']} | {r['members']} | {_fmt(r['records'])} | "
                     f"**{_fmt(r['records_per_s'])}**{_spread(r)} | {_fmt(r['mb_per_s'])} | "
                     f"{_fmt(r['records_per_s_incl_start'])} | {_fmt(r.get('join_s'))} | "
                     f"{_fmt(r['cpu_s_per_m_steady'])} | {_fmt(r['cpu_s_per_m_process'])} | "
                     f"{_fmt(r['broker_cpu_s_per_m'])} |")
        L.append("")
        L.append("Ratios (100 B records, steady clocks): engine/Java 1 member "
                 f"{_fmt(res.get('engine_vs_java_share_1m'))}, 4 members "
                 f"{_fmt(res.get('engine_vs_java_share_4m'))}; incl. start (1 member) "
                 f"{_fmt(res.get('engine_vs_java_share_1m_incl_start'))}; engine/krafka 1 member "
                 f"{_fmt(res.get('engine_vs_krafka_1m'))}; engine/franz-go 1 member "
                 f"{_fmt(res.get('engine_vs_franz_1m'))}, 4 members "
                 f"{_fmt(res.get('engine_vs_franz_4m'))}; engine/classic "
                 f"{_fmt(res.get('engine_vs_classic_ceiling'))} (1 member), "
                 f"{_fmt(res.get('engine_4m_vs_classic_ceiling'))} (4 members); CPU per record "
                 f"engine/Java {_fmt(res.get('engine_cpu_per_record_vs_java'))} steady, "
                 f"{_fmt(res.get('engine_cpu_per_record_vs_java_process'))} whole process.")
        L.append("")
        for size in (100, 1024):
            extra = _size_ratios(runs, size)
            if extra:
                L.append(f"- {size} B: " + extra)
        L.append("")
    jr = res.get("jni_summary", [])
    if jr:
        L.append("## 2. JNI path vs the engine alone")
        L.append("")
        L.append("`io.sharesink.engine.NativeEngineBench` (Java polling `NativeShareConsumerEngine` "
                 "through JNI, copying every key and value into a `byte[]`, one ACCEPT per batch) "
                 "against `sharesink-bench` with the same settings, and `sharesink-bench "
                 "--poll-from-thread --copy-records` (**engine-copy**: each batch polled from a "
                 "plain thread through `Handle::block_on` and every key and value copied into a "
                 "fresh vector, the JNI path without the JVM), back to back on the same 100 B "
                 "topic (which goes first rotates by round); 1 member each, clocks from the "
                 "first record.")
        L.append("")
        L.append("| client | records/s | MB/s | CPU s/M steady | CPU s/M process | join s |")
        L.append("|---|---|---|---|---|---|")
        for r in jr:
            if "error" in r:
                L.append(f"| {r['client']} | failed: {str(r['error'])[:300]} | | | | |")
            else:
                L.append(f"| {r['client']} | **{_fmt(r['records_per_s'])}**{_spread(r)} | {_fmt(r['mb_per_s'])} | "
                         f"{_fmt(r['cpu_s_per_m_steady'])} | {_fmt(r['cpu_s_per_m_process'])} | "
                         f"{_fmt(r.get('join_s'))} |")
        L.append("")
        L.append(f"`jni_vs_engine` = {_fmt(res.get('jni_vs_engine'))}; engine-copy ÷ engine "
                 f"= {_fmt(res.get('engine_copy_vs_engine'))}; JNI ÷ engine-copy = "
                 f"{_fmt(res.get('jni_vs_engine_copy'))}.")
        L.append("")
    L.append("## 3. Connect end to end: sharesink vs the classic sink runtime")
    L.append("")
    cs = res.get("connect", {})
    if cs.get("setup"):
        L.append(cs["setup"])
        L.append("")
    if cs.get("rows"):
        _md_table(L, ["scenario", "classic", "sharesink", "ratio / figure"], cs["rows"])
    if cs.get("latency_rows"):
        basis = res.get("latency_basis", {})
        L.append("### (e) Latency at fixed produce rates: produce → written by the sink")
        L.append("")
        L.append(
            "`bench/peers/rate-producer` (KafkaProducer 4.4.0, `acks=all`, `linger.ms=1`) sends "
            "at a fixed rate, each value carrying the wall time it was handed to the producer; "
            "latency = the time the sink had written it minus that. Rates are fractions of what "
            f"classic sustained in this run: fast sink {basis.get('fast_records_per_s', 0):,.0f}/s "
            f"({basis.get('fast_from')}), slow sink {basis.get('slow_rows_per_s', 0):,.0f} rows/s "
            f"({basis.get('slow_from')}). Each run a fresh topic (3 partitions) and connector, "
            "the tasks joined before the first send, the first second of records not timed. "
            "Fast sink: the FileStream file is read every 5 ms, one line in 20 timed at its "
            "first sighting (so up to 5 ms late, for both runtimes alike). Slow sink: the row's "
            "`written_at` (`clock_timestamp()` once its INSERT's 20 ms trigger has run) minus "
            "`produced_us`. The first second counts from the producer's first record. Records not "
            "written by the end count with their age then (a lower bound). **Fell behind** = "
            "more than one second of records still unwritten one second after the last send.")
        L.append("")
        _md_table(L, ["rate", "classic p50 / p99 / p99.9 / max",
                      "sharesink p50 / p99 / p99.9 / max", "p99 sharesink ÷ classic",
                      "CPU s per M records written, sharesink vs classic"],
                  [row + [""] * (5 - len(row)) for row in cs["latency_rows"]])
    if cs.get("scale_rows"):
        basis = res.get("scale_basis", {})
        L.append("### (f) Many more tasks than partitions: sharesink on a 12-partition topic")
        L.append("")
        L.append(
            "The slow sink of (a) (Debezium JDBC, 20 ms trigger per row, but 10 records per put: "
            "`share.consumer.max.poll.records=10`; one PostgreSQL connection per task) on `bench_scale` (12 partitions), 12, 50 and 100 "
            "sharesink tasks in the one worker (heap 1 GiB). Ideal = tasks × one task's rate, "
            f"{basis.get('per_task_rows_per_s')} rows/s ({basis.get('from')}). Rows/s over the "
            "second half of the run; the footprint at three quarters of it, per task = (running "
            "− before the connector) ÷ tasks. Engine off-heap = sharesink's "
            "`share-engine-off-heap-bytes` (JMX, read through the attach API): what the native "
            "library has allocated and not freed, all tasks together.")
        L.append("")
        _md_table(L, ["tasks", "rows/s of ideal", "machine CPU busy", "worker RSS MiB",
                      "heap used MiB", "engine off-heap MiB", "threads per task",
                      "broker connections per task", "s to RUNNING"], cs["scale_rows"])
    for note in cs.get("notes", []):
        L.append(f"- {note}")
    if not cs.get("rows"):
        L.append(f"Not run: {res.get('connect_reason', 'the connect part was not run')}.")
    L.append("")
    L.append("## Findings (generated from the figures above)")
    L.append("")
    for f in findings(res):
        L.append(f"- {f}")
    L.append("")
    L.append("## Profiles behind the fixes (earlier runs on this machine, not regenerated)")
    L.append("")
    for p in PROFILES:
        L.append(f"- {p}")
    L.append("")
    L.append("![chart](results.png)")
    L.append("")
    L.append("How to reproduce: `scripts/bench.sh` (full) or `scripts/bench.sh --quick`; see "
             "`bench/README.md`.")
    (docs / "RESULTS.md").write_text("\n".join(L) + "\n")
    try:
        chart(res, docs / "results.png")
    except Exception as e:  # noqa: BLE001 - never lose the report for the chart
        print(f"chart failed ({e}); writing the plain fallback chart")
        _fallback_png(res, docs / "results.png")


def _md_table(L: List[str], header: List[str], rows: List[List[Any]]) -> None:
    """A markdown table and the blank line after it."""
    L.append("| " + " | ".join(header) + " |")
    L.append("|" + "---|" * len(header))
    for row in rows:
        L.append("| " + " | ".join(str(c) for c in row) + " |")
    L.append("")


def _size_ratios(runs, size) -> str:
    def g(c, mm):
        r = _find(runs, c, mm, size)
        return r and r.get("records_per_s")
    parts = []
    for mm in (1, 4):
        e, j, k, fz = g("engine", mm), g("java", mm), g("krafka", mm), g("franz", mm)
        if e and j:
            parts.append(f"engine/Java {mm}m {_fmt(_ratio(e, j))}")
        if e and k:
            parts.append(f"engine/krafka {mm}m {_fmt(_ratio(e, k))}")
        if e and fz:
            parts.append(f"engine/franz-go {mm}m {_fmt(_ratio(e, fz))}")
    cl = g("classic", 1)
    if cl and g("engine", 1):
        parts.append(f"engine 1m/classic {_fmt(_ratio(g('engine', 1), cl))}")
    return ", ".join(parts)


def findings(res: Dict[str, Any]) -> List[str]:
    out: List[str] = []
    m = res.get("machine", {})
    load = (m.get("load_avg_at_start") or [0])[0]
    if load > 0.5 * (m.get("nproc") or 1):
        out.append(f"The machine was shared: load average {load:.1f} on {m.get('nproc')} cores at "
                   "the start. Short runs (quick mode) vary by 2-3x from one run to the next; "
                   "compare ratios from the full mode's medians on a quiet machine.")
    runs = res.get("consumer_summary", [])
    e1, j1, c1 = _find(runs, "engine", 1), _find(runs, "java", 1), _find(runs, "classic", 1)
    e4 = _find(runs, "engine", 4)
    if e1 and j1 and e1.get("cpu_s_per_m_steady") and j1.get("cpu_s_per_m_steady"):
        out.append(f"CPU per record: the engine used {e1['cpu_s_per_m_steady']:.3g} CPU s per million "
                   f"records against {j1['cpu_s_per_m_steady']:.3g} for the Java share consumer "
                   f"(steady), {e1['cpu_s_per_m_process']:.3g} against {j1['cpu_s_per_m_process']:.3g} "
                   "for the whole processes (the JVM's start-up and JIT included).")
    if e1 and j1 and c1 and (res.get("engine_vs_java_share_1m") or 99) < 4:
        ceiling = res.get('engine_vs_classic_ceiling') or 0
        out.append(f"Engine vs Java below 4x: one engine member made {e1['records_per_s']:,} "
                   f"records/s, {ceiling} of the classic consumer's {c1['records_per_s']:,}"
                   + (", the most this broker served one consumer on this machine"
                      if ceiling < 1 else
                      ": the broker served the engine's share session as fast as a classic "
                      "consumer, share-group work included")
                   + f"; 4x Java's {j1['records_per_s']:,} would be "
                   f"{4 * j1['records_per_s']:,}"
                   + (", more than the classic consumer itself made on this broker"
                      if 4 * j1['records_per_s'] > c1['records_per_s'] else "")
                   + ". The engine used "
                   f"{e1['cpu_s_per_m_steady']:.3g} CPU s per million records against Java's "
                   f"{j1['cpu_s_per_m_steady']:.3g}: what separates them here is the broker, not "
                   "the client's CPU." + _fetch_wait(e1))
    if e1 and c1 and e1.get("broker_cpu_s_per_m") is not None and c1.get("broker_cpu_s_per_m"):
        out.append(f"Broker cost: serving a share group took the broker {e1['broker_cpu_s_per_m']:.3g} "
                   f"CPU s per million records (engine, 1 member) against "
                   f"{c1['broker_cpu_s_per_m']:.3g} for the classic consumer: share-partition state, "
                   "acquisition locks and acknowledgements persisted to `__share_group_state`. On a "
                   "2-core machine that broker CPU is taken from the clients, which share the cores"
                   + (f"; with 4 members the engine reached {res.get('engine_4m_vs_classic_ceiling')} "
                      "of the classic ceiling" if e4 else "") + ".")
    jr = res.get("jni_summary", [])
    je, jj = _find(jr, "engine", 1), _find(jr, "jni", 1)
    if res.get("jni_vs_engine") is not None and je and jj:
        out.append(f"JNI vs engine: {res['jni_vs_engine']} (medians; the JNI runs ranged "
                   f"{_fmt(jj.get('records_per_s_min'))}–{_fmt(jj.get('records_per_s_max'))} "
                   f"records/s, the engine's {_fmt(je.get('records_per_s_min'))}–"
                   f"{_fmt(je.get('records_per_s_max'))}). Through JNI the Java side copies every "
                   f"key and value into a byte[]: {_fmt(jj.get('cpu_s_per_m_steady'))} CPU s per "
                   f"million records steady against {_fmt(je.get('cpu_s_per_m_steady'))} for the "
                   "engine alone."
                   + _jni_thread_split(res.get("jni_runs", []), je.get("cpu_s_per_m_steady"))
                   + _jni_without_jvm(res, _find(jr, "engine-copy", 1), jj))
    cres = res.get("connect", {}).get("results", {})
    a_cl, a_sh = cres.get("a_classic") or {}, cres.get("a_share") or {}
    if a_sh.get("rows_per_s") and a_cl.get("rows_per_s"):
        busy = a_sh.get("machine_busy")
        txt = (f"(a) slow sink: {a_sh['rows_per_s']} rows/s with {a_sh['tasks']} share tasks vs "
               f"{a_cl['rows_per_s']} with 3 classic tasks; the ideal with a 20 ms put is "
               f"{a_sh['tasks'] / 3:.0f}x.")
        if busy is not None and busy > 0.9:
            txt += (f" Both cores were {busy:.0%} busy during the sharesink window (other users' "
                    f"work included): worker {a_sh.get('worker_cpu_s')} CPU s and broker "
                    f"{a_sh.get('broker_cpu_s')} CPU s in {a_sh.get('window_wall_s')} s, against "
                    f"{a_cl.get('worker_cpu_s')} and {a_cl.get('broker_cpu_s')} for the classic "
                    "runtime. With 12 tasks the run is bounded by the CPU it can get, not by the "
                    "puts; one record per ShareFetch (max.poll.records=1) also makes the broker "
                    "serve one fetch and one acknowledgement per row.")
        out.append(txt)
    b_sh, b_cl = cres.get("b_share") or {}, cres.get("b_classic") or {}
    if b_sh.get("loss") is not None and b_cl.get("loss") is not None:
        txt = (f"(b) one stalled task cost sharesink {b_sh['loss']:.1%} of its rows/s "
               f"(1/N = {1 / b_sh['tasks']:.1%}) and the classic runtime {b_cl['loss']:.1%} "
               "(1/3 expected: the stalled task's partition stops).")
        if b_sh["loss"] > 1 / b_sh["tasks"]:
            rate = b_sh.get("rows_per_s_before") or 0
            parts = 3
            window = SHARE_DEFAULT_WINDOW
            secs = window / (rate / parts) if rate else None
            peers = b_sh["tasks"] // parts - 1
            txt += (" Above 1/N. With more members than partitions the broker's share assignor "
                    f"gives each member one partition, so the stalled task shares its partition "
                    f"with {peers} others. The share-partition's in-flight window is counted from "
                    "the lowest unacknowledged offset, and the stalled task holds the lowest "
                    "offsets of its partition until their locks expire (30 s, longer than the "
                    f"{b_sh.get('stall_s')} s stall), so those {peers} can "
                    f"run ahead by only `share.partition.max.record.locks` ({window}) records"
                    + (f", about {secs:.0f} s at {rate / parts:.0f} rows/s per partition, and "
                       "then sit idle for the rest of the stall" if secs else "")
                    + ".")
            b_w = cres.get("b_share_window") or {}
            if b_w.get("loss") is not None:
                window = (b_w.get("settings") or {}).get("share.partition.max.record.locks")
                txt += (f" With the window at {window or 'a larger value'} (row (b')) the loss was {b_w['loss']:.1%} "
                        f"in this run. Each figure is one {b_w.get('stall_s')} s stall; the rates "
                        "before a stall vary "
                        "by about 10% between runs on this machine, so differences of a few "
                        "points are within the noise.")
            txt += " A larger window or a shorter `share.record.lock.duration.ms` bounds it."
        else:
            txt += (" On a CPU-bound machine the other tasks get the stalled task's CPU, so both "
                    "losses can come out below their share; a negative loss means no loss "
                    "measurable above the noise.")
        out.append(txt)
    c_sh, c_cl = cres.get("c_share") or {}, cres.get("c_classic") or {}
    if c_sh.get("gap_ms") is not None and c_cl.get("gap_ms") is not None:
        out.append(f"(c) tasks.max 2 -> 3: longest interval without a row {c_sh['gap_ms']} ms "
                   f"(sharesink, starting {c_sh.get('gap_starts_after_change_s')} s after the PUT) vs "
                   f"{c_cl['gap_ms']} ms (classic, starting {c_cl.get('gap_starts_after_change_s')} s "
                   "after), with a median interval between rows of "
                   f"{c_sh.get('median_gap_ms')} / {c_cl.get('median_gap_ms')} ms. A single "
                   "short run: the gap varies by hundreds of ms between runs on a busy machine.")
    d_sh, d_cl = cres.get("d_share") or {}, cres.get("d_classic") or {}
    if d_sh.get("records_per_s") and d_cl.get("records_per_s"):
        busy = d_sh.get("machine_busy")
        n = d_sh.get("records") or 0
        per_m = _per_m
        txt = (f"(d) fast sink: sharesink {d_sh['records_per_s']:,} records/s vs classic "
               f"{d_cl['records_per_s']:,} ({res.get('connect_overhead')}). CPU per million "
               f"records: worker {per_m(d_sh, 'worker_cpu_s')} vs {per_m(d_cl, 'worker_cpu_s')} "
               f"s, broker {per_m(d_sh, 'broker_cpu_s')} vs {per_m(d_cl, 'broker_cpu_s')} s "
               f"(sharesink vs classic; {n:,} records).")
        if busy is not None and busy < 0.8:
            txt += (f" The machine was only {busy:.0%} busy during the sharesink window: the run "
                    "is bounded by waiting, not by CPU. A share-partition lends at most "
                    "`share.partition.max.record.locks` records at a time (counted from the "
                    "lowest unacknowledged offset), and a record is ACCEPTed only after the "
                    "sink's preCommit covers it and a later put returned, so each partition "
                    "delivers about one window per put-commit-acknowledge cycle; the classic "
                    "runtime has no such window.")
        elif busy is not None:
            txt += (f" Both cores were {busy:.0%} busy: the run is bound by CPU, which the broker "
                    "and the worker share.")
            sh_cpu = [per_m(d_sh, k) for k in ("worker_cpu_s", "broker_cpu_s")]
            cl_cpu = [per_m(d_cl, k) for k in ("worker_cpu_s", "broker_cpu_s")]
            if None not in sh_cpu + cl_cpu and sum(sh_cpu) > 0:
                txt += (f" Worker and broker together used {sum(sh_cpu):.3g} CPU s per million "
                        f"records for sharesink and {sum(cl_cpu):.3g} for classic: on cores that "
                        f"are both busy, sharesink's rate can be about {sum(cl_cpu) / sum(sh_cpu):.2f} "
                        "of classic's.")
        runs_sh, runs_cl = d_sh.get("runs") or [], d_cl.get("runs") or []
        if len(runs_sh) > 1 and len(runs_cl) == len(runs_sh):
            pairs = [(c.get("records_per_s"), s.get("records_per_s")) for c, s in zip(runs_cl, runs_sh)]
            txt += (" The (d) runs, classic then sharesink in each pair: "
                    + "; ".join(f"{_fmt(c)} / {_fmt(s)}"
                                + (f" ({s / c:.2f})" if c and s else "") for c, s in pairs)
                    + " records/s.")
        txt += _cpu_by_thread(d_sh, d_cl)
        warm = [w for w in cres.get("d_warmup") or [] if w.get("records_per_s")]
        if warm:
            shares = [w for w in warm if w["runtime"] == "share"]
            classic = [w for w in warm if w["runtime"] == "classic"]
            txt += (" Warm-up runs before (d), in order: classic "
                    + ", ".join(f"{w['records_per_s']:,}" for w in classic)
                    + " records/s; sharesink "
                    + ", ".join(f"{w['records_per_s']:,}" for w in shares)
                    + " records/s, with the broker's JIT compiler threads at "
                    + ", ".join(str(w.get("broker_jit_cpu_s")) for w in shares)
                    + " CPU s.")
        others = [(k, r) for k, r in cres.items()
                  if k.startswith("d_share_") and r.get("records_per_s")]
        for k, r in others:
            settings = ", ".join(f"`{a}={b}`" for a, b in (r.get("settings") or {}).items())
            txt += (f" With {settings or 'other settings'}: {r['records_per_s']:,} records/s "
                    f"({round(r['records_per_s'] / d_cl['records_per_s'], 3)} of classic).")
        out.append(txt)
    lat = _fast_latency_cpu(cres)
    if lat:
        out.append(lat)
    spread = _fast_latency_spread(cres)
    if spread:
        out.append(spread)
    eps = _fast_latency_episodes(cres)
    if eps:
        out.append(eps)
    return out


def _load_text(load: Dict[str, float], rest: Optional[Dict[str, float]] = None) -> str:
    """Cores per series of a LoadTimeline window (`rest` in brackets beside each), with
    `outside` = busy cores that neither the watched processes nor steal account for."""
    def outside(x):
        ours = sum(x.get(k, 0.0) for k in ("broker", "worker", "producer", "bench"))
        return round(max(0.0, x.get("busy", 0.0) - x.get("steal", 0.0) - ours), 2)

    def cell(name, key):
        v = outside(load) if key == "outside" else load.get(key)
        if v is None:
            return None
        r = (outside(rest) if key == "outside" else rest.get(key)) if rest else None
        return f"{name} {v}" + (f" ({r})" if r is not None else "")
    cells = [cell("both cores busy", "busy"), cell("broker", "broker"),
             cell("broker GC", "broker_gc"), cell("worker", "worker"),
             cell("worker GC", "worker_gc"), cell("producer", "producer"),
             cell("bench reader", "bench"), cell("outside these", "outside"),
             cell("stolen", "steal")]
    return ", ".join(c for c in cells if c)


def _fast_latency_episodes(cres: Dict[str, Any]) -> str:
    """(e) fast sink: each row's late records (at or above its run's p99) as episodes, with the
    cores the machine's parts used in them against the rest of the run ('' when not measured)."""
    cells = []
    for frac in (25, 50, 75):
        per = []
        for runtime, label in (("share", "sharesink"), ("classic", "classic")):
            r = cres.get(f"e_fast_{frac}_{runtime}") or {}
            e = r.get("episodes") or {}
            if not e.get("episodes"):
                continue
            worst = "; ".join(f"{w['max_ms']} ms at {w['at_s']} s for {w['for_s']} s"
                              for w in e.get("worst", []))
            per.append(f"{label}, p99 {e['threshold_ms']} ms: {e['late_records']:,} late records "
                       f"in {e['episodes']} episodes over {e['episodes_s']} of {e['span_s']} s "
                       f"(worst {worst}); in them {_load_text(e['load_in_episodes'], e['load_rest'])}")
        if per:
            cells.append(f"at {frac / 100:g} of classic's sustained rate: " + " | ".join(per))
    if not cells:
        return ""
    return ("(e) fast sink, where each row's worst 1% came from (records at or above the run's "
            "p99 grouped into episodes by produce time; in them, the cores of 2 each part of the "
            "machine used, the rest of the run in brackets; `outside these` is busy time no "
            "watched process or steal accounts for): " + "; ".join(cells) + ".")


def _fast_latency_spread(cres: Dict[str, Any]) -> str:
    """(e) fast sink, at each rate where sharesink's p99 came out above classic's: the two p50s
    and every run's p99, so a reader sees whether the ratio is a shift or one run's episode."""
    cells = []
    for frac in (25, 50, 75):
        sh, cl = cres.get(f"e_fast_{frac}_share") or {}, cres.get(f"e_fast_{frac}_classic") or {}
        if not (sh.get("kept_up") and cl.get("kept_up")) or None in (sh.get("p99_ms"), cl.get("p99_ms")):
            continue
        if sh["p99_ms"] <= cl["p99_ms"]:
            continue
        p99 = {n: sorted(x["p99_ms"] for x in (r.get("runs") or [r]) if x.get("p99_ms") is not None)
               for n, r in (("share", sh), ("classic", cl))}
        p50 = {n: sorted(x["p50_ms"] for x in (r.get("runs") or [r]) if x.get("p50_ms") is not None)
               for n, r in (("share", sh), ("classic", cl))}
        if not all(p99.values()) or not all(p50.values()):
            continue
        overlap = p99["share"][0] <= p99["classic"][-1]
        cells.append(
            f"at {frac / 100:g} of classic's sustained rate, p50 {p50['share'][0]}-{p50['share'][-1]} "
            f"ms against {p50['classic'][0]}-{p50['classic'][-1]}, and single runs' p99 "
            f"{p99['share'][0]}-{p99['share'][-1]} ms against {p99['classic'][0]}-"
            f"{p99['classic'][-1]}" + (" (the ranges overlap)" if overlap else " (no overlap)"))
    if not cells:
        return ""
    return ("(e) fast sink, where sharesink's p99 was above classic's (both kept up; each row is "
            "the run with the median p99 of its runtime): " + "; ".join(cells) + ". A run's p99 "
            "is its worst 1% of records, so one episode of a fraction of a second (a GC, a burst "
            "of the producer's, a compile) moves it by tens of ms in either runtime.")


def _fetch_wait(run: Dict[str, Any]) -> str:
    """How much of an engine run its share session spent waiting for ShareFetch answers ('' when
    the run did not report its fetches)."""
    fetches, avg = run.get("fetches"), run.get("fetch_avg_ms")
    if not fetches or avg is None or not run.get("records_per_s"):
        return ""
    secs = run["records"] / run["records_per_s"]
    return (f" Its one share session sent {fetches:,} ShareFetch requests, about "
            f"{run['records'] // fetches:,} records each (whole log batches: the broker hands out "
            f"at least `max.poll.records`), one at a time, each answered after {avg} ms on average: "
            f"{min(1.0, fetches * avg / 1000 / secs):.0%} of the run was spent waiting for the "
            "broker's answers.")


def _fast_latency_cpu(cres: Dict[str, Any]) -> str:
    """(e) fast sink: the broker's CPU per record while producer and sink run together, beside
    the backlog of (d), where no producer runs ('' when not measured)."""
    cells = []
    for frac in (25, 50, 75):
        sh, cl = cres.get(f"e_fast_{frac}_share") or {}, cres.get(f"e_fast_{frac}_classic") or {}
        if sh.get("broker_cpu_s_per_m") is None or cl.get("broker_cpu_s_per_m") is None:
            continue
        cells.append(f"{frac / 100:g} of classic's sustained rate: {sh['broker_cpu_s_per_m']} vs "
                     f"{cl['broker_cpu_s_per_m']} (both cores {sh.get('machine_busy')} vs "
                     f"{cl.get('machine_busy')} busy)")
    if not cells:
        return ""
    return ("(e) fast sink: the broker's CPU per million records written, sharesink vs classic, "
            "its produce path included in both: " + "; ".join(cells)
            + ". With the producer running (`linger.ms=1`, so small producer batches) serving the "
            "share group cost the broker more per record than on (d)'s backlog, where the "
            f"difference was {_backlog_broker_gap(cres)} s: each ShareFetch acquires, and each "
            "acknowledgement persists, the few batches that arrived since the last one. On two "
            "cores that broker work is taken from the tasks, which is why the rates are fractions "
            "of what classic sustains with the producer running rather than of (d). The worker's "
            "figures are in the table's last column.")


def _per_m(r: Dict[str, Any], key: str, digits: Optional[int] = 2) -> Optional[float]:
    """A run's CPU seconds under `key` per million of its records (None when not measured),
    rounded to `digits` (None: not rounded)."""
    if r.get(key) is None or not r.get("records"):
        return None
    v = r[key] * 1e6 / r["records"]
    return v if digits is None else round(v, digits)


def _backlog_broker_gap(cres: Dict[str, Any]) -> str:
    sh = _per_m(cres.get("d_share") or {}, "broker_cpu_s", None)
    cl = _per_m(cres.get("d_classic") or {}, "broker_cpu_s", None)
    return "?" if sh is None or cl is None else str(round(sh - cl, 2))


def _cpu_by_thread(d_sh: Dict[str, Any], d_cl: Dict[str, Any]) -> str:
    """Where the CPU of the two (d) runs went, by thread group (empty when not measured)."""
    bs, bc = d_sh.get("broker_cpu_s_by_thread"), d_cl.get("broker_cpu_s_by_thread")
    ws, wc = d_sh.get("worker_cpu_s_by_thread"), d_cl.get("worker_cpu_s_by_thread")
    if not (bs and bc and ws and wc):
        return ""
    return (f" By thread (CPU s over each run, sharesink vs classic): broker JIT compiler threads "
            f"{bs['jit']} vs {bc['jit']}, request handlers {bs['requests']} vs {bc['requests']}, "
            f"share-state persister and share coordinator {bs['share_state']} vs "
            f"{bc['share_state']}, GC {bs['gc']} vs {bc['gc']}, other {bs['other']} vs "
            f"{bc['other']}; worker JIT {ws['jit']} vs {wc['jit']}, GC {ws['gc']} vs {wc['gc']}, "
            f"task threads {ws.get('tasks', '?')} vs {wc.get('tasks', '?')}, sharesink's engine "
            f"{ws.get('engine', '?')}, the rest {ws['other']} vs {wc['other']}. The broker's "
            "JIT time is compilation of share-group code paths; it shrinks only slowly from run "
            "to run (a long-lived group pays it once), and the worker's classic runs pay their "
            "own JIT time in the same way.")


# Profiles taken on this machine and what they led to (commits on main). Unlike the findings
# above, this is a record of past runs, not regenerated from this run's figures.
PROFILES = [
    "The library the full runs measured, and the engine changes since 8f158dd (2026-12-03): the "
    "full runs committed in 0fd0614 and 2d572ab ran their Connect rows and the JNI bench on the "
    "plugin built at 8f158dd, left in java/target (`bench.sh` built one only when none was "
    "there; it always builds since 8d6482b). This run is the first on the engine of 9e2e2e4, "
    "e6d9c67 and 3e1d66f together. Afterwards, on a freshly started bench cluster whose broker "
    "was still compiling its share-group code (its JIT threads 0.3-1.8 CPU s per run), the "
    "libraries of 8f158dd and of this run alternated on one worker: (d) 627,000-966,000 against "
    "687,000-880,000 records/s after the first run of each series, within the broker's warm-up "
    "trend; at 382,000 records/s (0.75 of this run's classic rate) every library fell behind, "
    "p50 0.85-1.2 s with 8f158dd's, 1.2-2.9 s with this run's, 3.0-3.8 s with e6d9c67's (two "
    "runs each, four with this run's). No difference between them stood out from the run-to-run spread.",
    "(d) fast sink, tasks waiting on a full window (2026-12-03, FileStream, 3 tasks, 3 "
    "partitions, 2 M records, window 4000; a freshly started bench cluster, where sharesink made "
    "478,000-559,000 records/s with both cores 46-57% busy and classic 840,000-1,040,000): all "
    "three task threads were in `NativeEngine.poll` (jstack), and a temporary engine build that "
    "logged each ShareFetch showed the cycle. A fetch brings 5,000-8,000 records (whole windows "
    "of two or three partitions); fetches without acks come back empty while they are held; the "
    "member acks them at once and waits 15-55 ms for more. The slowest were members with the "
    "fewest records: 1,439 records acked 52 ms after they came, 1,749 after 56 ms. Fewer than "
    "`share.commit.max.records` had been put, so the driver polled for more and waited its "
    "held-poll bound (50 ms) for the empty poll that starts a commit, while the windows (its own "
    "records among them) kept every member's fetches waiting. The engine now ends that poll at "
    "its first empty fetch after records while the member holds records (3e1d66f): 761,000-"
    "778,000 records/s against 543,000-559,000, alternating libraries on one worker; members "
    "hold their records 7-8 ms and wait 14-17 ms for the next (11-13 and 18-21 before).",
    "(e) fast sink, sharesink's p50 above classic's at rates that leave CPU to spare "
    "(2026-12-03, FileStream, 3 tasks, 77,600 records/s, 15 s runs, libraries alternated on one "
    "worker, three runs per series, two series each; the full run on 48f15d8 had p50 5.3-5.6 ms "
    "against classic's 4.1-4.4 at 39,000-116,000/s): a member that holds records and read to the "
    "end asks for a whole 2 ms wait (minimum bytes `fetch.max.bytes`, e6d9c67), so a record "
    "produced meanwhile waits for the wait's end. A library asking for `fetch.min.bytes` (1) "
    "instead, answered at the first producer batch: p50 4.6-5.1 ms after each series' first run "
    "against 5.5-5.7 (classic 4.4), but the broker's CPU per million records 8.0-8.6 s against "
    "6.4-7.4 (classic 5.9) and both cores 0.76-0.80 busy against 0.64-0.69; p99 18-99 ms "
    "against 13-28. So the p50 gap is the price of half as many ShareFetches, and asking for "
    "less would not bring p99 down; the whole wait stays.",
    "(d) fast sink, the worker's task threads (2026-12-03, FileStream, 3 tasks, 2 M records, "
    "warm bench cluster; JFR execution samples every 1 ms over two sharesink runs, 1,024 and "
    "1,165 task-thread samples in two recordings; JFR samples Java code only, so the engine's "
    "native work is not in them): the adapter's ack bookkeeping (AckLedger, OffsetMap, the "
    "Acknowledger, commit) took 25-31% of the samples and the rest of the driver (the acquire, "
    "deliver and put loops) 19-21%, against 20-24% for FileStream's put and 24-25% for "
    "conversion; taking records out of the engine (the batch layout, the byte[] copies) 4-5%. "
    "The driver's samples fall on the back edges of its per-record loops (acquire, convert, "
    "deliver, reopenRewound, the put lists, putReturned): each record's objects (raw record, "
    "ledger entry, pending, SinkRecord) are walked about ten times per batch of several thousand. "
    "One per-record cost had a clear cause, the lock-duration check reading "
    "`share.commit.interval.ms` through AbstractConfig for every record (38 of 1,157 samples), "
    "and is gone (0074004; A/B of (d), two series of three warm runs per plugin: no difference "
    "beyond the spread, 0.97-1.08 M records/s either way after the first run of each restart). Fusing the per-record passes is the "
    "next step on the worker's side; not done.",
    "JNI vs engine, what the gap is (2026-12-03, 5 M records of 100 B, 6 partitions, one "
    "member; four variants alternating, four rounds, after warm-up; the Rust rates on the clock "
    "before the fix at the end): the engine bench polling "
    "in a task of its runtime made 2.60-2.75 M records/s (0.55-0.60 CPU s per run); polling "
    "from a plain thread through `Handle::block_on`, as JNI's callers do (`sharesink-bench "
    "--poll-from-thread`), 2.60-2.62 M (0.58-0.62 s); from a plain thread copying every key and "
    "value into a fresh vector (`--copy-records`), 2.47-2.75 M (0.71-0.81 s); the JNI bench "
    "2.21-2.42 M (0.99-1.11 s). So handing batches to a thread outside the runtime and copying "
    "them cost no rate. In the JNI runs the native runtime's threads used 0.60-0.68 CPU s, about "
    "what the whole engine bench used (perf over a whole run: 1,403 samples on those threads "
    "against 1,432 for the engine bench, `decode_body` 210 against 202); the polling thread "
    "used 0.32-0.35 s (the batch layout, the byte[] copies and the acks) and the JIT compiler "
    "0.01-0.10 s in the measured window. A library whose log layer was not installed (so no "
    "span routing) gave 0.60-0.67 s on the runtime threads and 2.31-2.47 M records/s, no "
    "different. With the broker pinned to one core and the client to the other, both ran faster "
    "(engine 3.11-3.22 M, JNI 2.80-2.96 M, 0.87-0.95 of it). The gap is the JVM side's own CPU "
    "(the copies converters need, the JIT) taken from the two cores the broker's fetch cycle runs "
    "on, not a cost the JNI boundary adds to the engine. The engine bench's clock also stopped at "
    "the next 100 ms tick of its progress loop after the last record, so its rates were up to "
    "5% low; it now stops at the last record.",
    "JNI vs engine, the library's counting allocator (2026-12-03, 5 M records of 100 B, 6 "
    "partitions, four rounds of engine bench, JNI, JNI built without the live-bytes counter): "
    "the native runtime's threads used 0.61-0.71 CPU s counting and 0.59-0.70 not, and the JNI "
    "runs made 0.82-0.92 of the engine's rate either way. The shared atomic counter behind "
    "`share-engine-off-heap-bytes` is not why those threads cost more inside the JVM.",
    "(e) fast sink, the broker's extra CPU with a live producer (2026-12-03, FileStream, 3 "
    "tasks, 237,000 records/s, 20 s runs, warm broker; request counts from the broker's "
    "`RequestsPerSec` counters, samples from JFR on the broker, one run each): classic sent "
    "18,475 Fetches, sharesink 43,500-44,200 ShareFetches and 4,050-4,080 writes to "
    "`__share_group_state`, about one producer batch per fetch. Of the broker's samples, "
    "handling ShareFetch took 100 of 262 against 15 of 112 for Fetch, produce handling 68 "
    "against 40 (a produce completes the share fetches parked on its partition), the share-state "
    "persister, the ShareFetch executor and the share coordinator 53 against 0. So each "
    "ShareFetch (acquiring records, their in-flight state, a delayed operation) costs the broker "
    "several classic Fetches, and the engine sent more of them: a caught-up member's 2 ms wait "
    "asked for 1 byte, so the broker answered it with the first producer batch to land. Asking "
    "for `fetch.max.bytes` instead, so that the wait runs out (e6d9c67): 22,400-22,700 "
    "ShareFetches, 2,500-2,570 state writes, broker CPU 1.83-1.86 s per million records against "
    "2.24-2.29 (classic 1.78-1.93 that session), p50 5.7-5.8 ms against 5.8-5.9; p99 within its "
    "run-to-run noise (33 and 81 ms against 48 and 63).",
    "(e) fast sink, the episodes in a run's first seconds and the median (2026-12-02, "
    "FileStream, 3 tasks, 20-25 s runs on a kept cluster, one rate at a time): the full run on "
    "8f158dd missed the p99 goal at every rate (5.4, 6.3 and 3.4x classic), set by episodes of "
    "250-760 ms in the first 10 s (classic's 156-261 ms); after them, p99 was 10.7 against 7.4 "
    "ms at 93,000/s. Fetch timings logged by a temporary engine build showed, in a cold run at "
    "93,000/s, ShareFetch round trips of 90-176 ms for all three members at once and records "
    "300-480 ms old when fetched in the first second; the broker's log was quiet and the "
    "adapter's compiled code unchanged over the run (earlier: not the record-lock window, not "
    "garbage collection, not the assignment). The trigger was the producer: a fresh "
    "RateProducer JVM compiles for its first second or two on the two cores the broker and the "
    "worker share, and sharesink, whose broker work per record is larger, drained that backlog "
    "more slowly. The producer now warms up for 3 s on a topic of its own while the tasks join "
    "(42b87df): sharesink's p99 at 93,000/s went from 168-489 ms cold to 19-28 ms warm. What "
    "was left was the median, about 1 ms above classic's: a member that had read to the end of "
    "the log asked its next fetch with a wait of 0, mostly found nothing new, and paused 1-2 ms "
    "before the next. After a fetch that brought fewer records than it asked for, the next now "
    "waits up to 2 ms at the broker, which answers as records arrive (9e2e2e4): p50 5.4 -> 4.4 "
    "ms at 93,000/s (classic 4.2), p99 44-62 -> 16-25 (classic 13-24); at 279,000/s p99 "
    "173-382 -> 47 ms (classic 129). Parking every held fetch instead gave similar latency but "
    "cost (d) about 5%: fetches parked on a window full of held records held up the acks that "
    "free it.",
    "JNI vs the engine and (d), run to run (2026-12-02, after the full run on 9e2e2e4, which "
    "had jni_vs_engine 0.85 and (d) 0.746): `scripts/bench.sh --parts jni` ten times, five "
    "with the engine of 9e2e2e4 and five without its fetch-wait change, alternating: 0.77, "
    "0.85, 0.90, 0.95, 1.01 with it, 0.89, 0.90, 0.93, 0.89, 0.94 without (the JNI medians "
    "2.2-2.6 M records/s in both; the engine's moved as much). In the same way (d): sharesink "
    "0.92-1.10 M records/s warm in this session's A/B runs and classic 0.97-1.24 M, so one "
    "pair of runs moves the ratio by more than the goal's margin; the full run's classic made "
    "1.235 M, its sharesink 0.92 M.",
    "(e) fast sink, one-second gaps (the full run on ab6ed5a, 110,000 records/s): max latency "
    "1,010-1,015 ms and p99 506-509 ms in two of three sharesink runs. A poll waited out the "
    "task's whole timeout (1 s) while the share-partition's in-flight window was full of "
    "records put since the last commit: nothing more could arrive, and only the empty poll "
    "that asks for the commit would free the window. Such a poll now waits at most 50 ms "
    "(8f158dd); in this run the largest sharesink max at that rate was 131 ms.",
    "(d) fast sink, the worker (JFR at the profile setting on the worker during two sharesink "
    "runs of 2 M records, warm; 2026-12-02): of a task thread's samples, 43% were the adapter's "
    "AckLedger, about half of it `TreeMap<Long, Entry>` (a node, a rebalance and boxed "
    "comparisons per record); the legacy FileStream put 14%, conversion 21%. The ledger now "
    "keeps a partition's records in two sorted arrays (`OffsetMap`, c8b89b1): the worker's CPU "
    "per run went from 3.3-3.5 s to 2.9-3.1 s per 2 M records, below classic's 3.3-3.5 s in "
    "the same series (sharesink 861-991k records/s, classic 0.88-1.07 M). What is left between "
    "them is the broker's share-group work: 0.7-0.9 CPU s per run against 0.05-0.08 for "
    "classic (request handlers about 0.4 s, the share-state persister and coordinator 0.2 s).",
    "(e) fast sink at fixed rates with the machine not saturated (FileStream, 3 tasks, 15 s per "
    "run, warm worker; 2026-12-02): at 25,000 records/s sharesink had p50 30 ms and p99 58 ms "
    "against classic's 4 and 16 ms; at 75,000/s 31 and 90 ms against 4 and 35. The cause: "
    "while a member holds unacknowledged records, a ShareFetch that came back empty was "
    "followed by a flat 50 ms (`share.fetch.max.wait.held.ms`) in which only a fetch carrying "
    "acks went out, so new records waited for it. A long-polled fetch instead (the broker "
    "completes it as data arrives) gave p50 4.5 ms but p99 149 ms at 75,000/s: acks made "
    "meanwhile wait behind it. The pause now starts at 1 ms and doubles per further empty "
    "fetch up to the same 50 ms (6ef7808): p50 5.1 and 5.4 ms, p99 14.6 and 24.4 ms at the two "
    "rates, with the broker's CPU per record up about as much as classic spends (25,000/s: "
    "19.8 CPU s per million records against 10.2 before and classic's 18.4).",
    "JNI path vs the engine alone, the fetch cycle (2026-12-02; 5 M records of 100 B, one "
    "member): the engine bench's one share session sent 2,502 ShareFetch requests of one "
    "2,000-record log batch each, one at a time, answered after 0.6 ms on average in a 0.68 ms "
    "cycle: the engine waits for the broker 88% of the time (0.09 CPU s per million records). "
    "Through JNI the cycle was 0.9-1.0 ms: a fetch went out only while fewer records than "
    "`share.buffer.max.records` (2 x `max.poll.records` = 1,000) were buffered, so with "
    "2,000-record batches the next one waited until the Java thread had been woken and had "
    "taken the last. Letting one batch exceed the record bound (45d83b8) took the JNI bench "
    "from 2.01-2.21 M to 2.36-2.66 M records/s with the engine bench at 2.60-2.76 M alongside; "
    "Connect's (d) did not change beyond its noise. In the JVM the runtime's threads still use "
    "more CPU for the same records than the whole engine bench (perf: `decode_body` 204 "
    "samples against 114, 1,450 samples in all against 1,007, no page faults on those "
    "threads); why the same decoding costs more there was not traced.",
    "JNI path vs the engine alone (perf at 1999 Hz over 3 s of steady consumption, 12 M records "
    "of 100 B, one member, the bench's JVM options; symbols of the plugin's library resolved "
    "by hand; 2026-12-02; the clones it found removed in 1d2f02d): the engine bench used 0.18 "
    "CPU s per million records in "
    "all. The JNI bench used 0.34-0.36: 0.22-0.23 in the native runtime's threads and 0.11 in "
    "the polling thread (GC 0.002, JIT 0.01). The runtime's threads spread their samples as the "
    "engine bench does (kernel context switches 18% vs 12%, socket copies 12% vs 12%, "
    "decode_records 10% vs 13%), except `Bytes` reference-count increments, 9.7% vs 5.8% "
    "(every record's value is a clone of its response buffer; in the JVM the polling thread "
    "drops the clones; why the increments cost more there was not traced). The polling "
    "thread: compiled Java (the byte[] "
    "copies, the acks) 36%, `write_batch` and its memcpy (the batch layout) 20%, dropping the "
    "records 10%, the kernel (parking and waking) 18%. On two cores shared with the broker, "
    "every CPU second there is taken from the broker and the engine. The byte[] copies are "
    "left as they are: converters need them. The clones are gone (1d2f02d): a batch holds its "
    "buffers once and its records are spans into them, so no record takes or drops a "
    "reference count (nor its topic's). `scripts/bench.sh --parts jni` before and after, one "
    "after the other on an AMD EPYC with 2 cores (5 pairs, 5 M records of 100 B): the engine "
    "alone 0.12 -> 0.09 CPU s per million records, the JNI path 0.24 -> 0.20 (native threads "
    "0.155 -> 0.13, polling thread 0.071 -> 0.063), jni_vs_engine 0.66 -> 0.77.",
    "Engine CPU (perf, engine bench, 4 members, 100 B): 43% of the engine's CPU was page "
    "faults: glibc's malloc handed every ~1 MiB fetch response back to the kernel and the next "
    "one was faulted in and zeroed again. mimalloc as the global allocator of the bench binary "
    "and the JNI library (bbe934b) took it from 0.27 to 0.13 CPU s per million records; "
    "reserving one record vector per response instead of growing it record by record "
    "(db6b55e) to 0.10-0.11.",
    "(d) fast sink, per-member totals logged at stop: each ShareFetch took 20-75 ms on average "
    "and returned one producer batch (~2,400 records) while a put took 4-5 ms. Fetches parked "
    "at the broker were not completed when acknowledgements freed the share-partition's window "
    "(Kafka 4.4; effect measured, cause in the broker not traced) and waited out "
    "`fetch.max.wait.ms`. Fetch waits now start at 5 ms and back off on empty fetches (20e60ca): "
    "with 1M records on one worker, 140-230k records/s became 410-490k (classic 620-640k in the "
    "same runs), with both cores ~94% busy instead of 35-65%.",
    "(b) per-member totals logged at stop (full run on 5bba4b4, 12 tasks on 3 partitions): the "
    "broker assigned each member one partition, 4 members per partition. The stalled task "
    "(task-1, partition 0) put 942 rows. Its 3 partition peers put 1,638-1,647 rows each after "
    "36-38 empty fetches. The 8 members on the other partitions put 1,847-1,857 rows each "
    "after 2-11 empty fetches. So the loss above 1/N is the 3 peers idling once the window "
    "ahead of the stalled record was used up; with the window at 4000 ((b')) it does not run "
    "out within the stall.",
    "(d) depends on how warm the broker's share-group code is (runs of (d) alone on a fresh "
    "cluster, 29b5c73's warm-up aside): sharesink made 0.48 of classic with the broker at 4.9 "
    "CPU s per 2M records on the first run, 0.58-0.60 after one unrecorded run, 0.73 after four "
    "(broker 1.7 CPU s), and 1.03 in the full run of 5bba4b4 (broker 1.0 CPU s), where the "
    "consumer parts and (a)-(c) ran first. Classic varied 584-795k records/s across these runs.",
    "(d), earlier: a fetch without acks parked while the member's own records filled the window "
    "held up the acks that would free it (the broker serves one request per connection at a "
    "time). Such fetches no longer wait (a98048c): 110-124k records/s became ~275k.",
    "(d), CPU per thread (/proc, 2M records, warm runs, on 227c65d-cc18286): per sharesink run "
    "the broker spent 0.7-2.0 CPU s in its JIT compiler threads, 0.5-1.0 s in request handlers "
    "and 0.4-0.8 s in the share-state persister and share coordinator, against 0.1-0.45 s in "
    "all for a classic run; the worker's task threads used about 4.0-4.4 s against 3.1-3.9 s. "
    "The broker's JIT time fell only slowly with repeated runs: in one A/B of ten sharesink "
    "runs it went from 1.7 s to 0.25-0.27 s, while sharesink went from 392k to 570-600k "
    "records/s against classic at 585-722k. A worker JFR profile put about a quarter of the task threads' samples in "
    "the adapter's bookkeeping (a concurrent map written and cleared per record for the "
    "errant-record reporter, ledger scans); b17c504 and cc18286 removed the map and the "
    "repeated scans.",
    "(d), acknowledging whole acquired ranges (227c65d): the broker tracks and persists a "
    "range per offset once part of it is acknowledged (SharePartition.acknowledgeBatchRecords), "
    "so the adapter now ACCEPTs whole ranges where it can. A/B on one broker (two Connect "
    "clusters, the new plugin and 2f77a59's, alternating ABBA, 4 warm runs each): defaults "
    "432-467k vs 378-454k records/s; with `share.consumer.max.poll.records=200` 405-515k vs "
    "386-506k, broker request-handler CPU 0.49-0.87 vs 0.50-0.76 s. No difference beyond the "
    "noise: in (d) a put takes whole fetched batches, so acknowledgements were already whole "
    "ranges nearly always. The change stays for sinks whose puts split ranges.",
    "(d), the adapter's per-record passes (2026-12-03): a worker JFR profile (1 ms sampling, "
    "two warm sharesink runs) put 11% of the task threads' samples in AckLedger.putReturned (a "
    "binary search per record to check it was still held, and a copy of every put's records), "
    "7% in the ledger's acquire (a map look-up per record), 3% in OffsetMap moving its arrays "
    "element by element, and four more passes per put in the driver. Now each entry carries a "
    "held flag, the ledger keeps the put's own list, acquire caches the partition of a run, "
    "OffsetMap moves by block copies, one pass builds a put's records, entries and new "
    "partitions, counters are added once a batch, and a record's Kafka headers are built once, "
    "not twice. A/B on one worker (plugins swapped; three rounds of one unrecorded and four "
    "recorded sharesink runs and one classic run each): sharesink 646,909 -> 747,058 records/s "
    "(medians of 12 runs; classic 734,883 and 696,026 in the same rounds), the worker's CPU "
    "outside its JIT and GC threads 1.87 -> 1.55 s per million records. Single runs still "
    "overlap (460-758k against 653-820k).",
    "(d), the broker's share-group work and the empty fetches (2026-12-03): a broker JFR "
    "profile (1 ms sampling, two sharesink runs of (d); the recording itself slowed them to "
    "267,000 records/s and made the broker's JIT busy, so shares, not times) had 1,027 samples "
    "on its request handlers, network thread, share-state persister, share coordinator and "
    "ShareFetch executor: ShareFetch handling in 312 of them (`DelayedShareFetch.tryComplete` "
    "in 203), the persister's write-state answers in 146 (they complete parked fetches too), "
    "acknowledgement handling in 46 and acquisition in 46. So the cost is per ShareFetch more "
    "than per record. A counter of empty fetches (ebfb12b; JMX "
    "`share-engine-fetch-requests-empty-total`) then showed 350-520 of each member's 530-890 "
    "ShareFetches per run empty: after a fetch that filled up, a member holding records paused "
    "1 ms after an empty answer, then 2, 4, ..., fetching a window that only its own acks "
    "could free. Raising `max.poll.records` to 2000 or 4000 did not change the count (fewer, "
    "larger fetches with records, as many empty ones). Now an empty fetch after one that took "
    "more records than it asked for (whole log batches past `max.poll.records`, adf4533; never "
    "in `record_limit` mode, so (a) and (b) keep the short pause) waits for acks (at most `share.fetch.max.wait.held.ms`, 256e76b): A/B on one worker, three "
    "rounds of four recorded runs per plugin, 280-420 ShareFetches per member, 100-185 of them "
    "empty; sharesink 610,153 -> 623,250 records/s (medians of 12 runs), broker CPU per "
    "million records 0.67 -> 0.63 s (medians), both within the spread of this machine, where "
    "the broker's CPU per record fell from round to round for both plugins.",
    "(e) fast sink, where the p99 comes from (2026-12-03, `scripts/bench.sh --parts connect "
    "--scenarios e` on the code of the episode profile, so without (d) and with a basis of "
    "47,267 records/s, the rates 11,817, 23,634 and 35,450/s; one full set of runs): at every "
    "rate both runtimes' late records (at or above their run's p99) fell in 1-7 episodes of "
    "0.06-0.56 s, and in them both cores were 1.71-2.09 busy, against 1.58-1.9 in the rest of "
    "the runs. The part that grew in the episodes was the producer: 0.75-1.02 cores in them "
    "against 0.49-0.82 elsewhere, while the broker and the worker used about what they used in "
    "the rest (GC at most 0.23 cores); busy time outside the watched processes was at most 0.03 cores in them. So the "
    "RateProducer (`linger.ms=1`, a send per record) is the largest single user of the two "
    "cores even at 12,000 records/s, and a p99 is set by moments when its bursts leave the "
    "broker and the worker too little CPU. Outside the episodes, over all 18 runs, sharesink's broker used "
    "0.58-0.93 cores against classic's 0.42-0.72 and its worker 0.21-0.29 against 0.25-0.61, so the same "
    "burst costs sharesink more: the rows' p99 was 1.37-2.6x classic's (single runs "
    "59.5-287.7 ms against 39.5-250). Three of the seven "
    "worst sharesink episodes listed started within the first second timed (0.0, 0.3 and 0.94 s), none of "
    "classic's: a share group's first seconds still cost more than a warm classic consumer's.",
    "(e) the RateProducer's own first seconds (2026-12-04, alone against the bench broker, "
    "its CPU per 0.2 s and per thread): its JVM's C2 compiler used 0.6-0.8 cores for about 16 s "
    "from start, well past the 3 s warm-up, and the flush at the switch to the timed topic set "
    "it recompiling the send path again. Over the first 5 timed seconds the producer used "
    "1.07-1.21 cores (12,000 and 35,000 records/s) against 0.36-0.58 later. Without the flush "
    "and with 10 s of warm-up: 0.67 at 12,000/s (1.05 at 35,000/s, a single run). C1 only "
    "(`TieredStopAtLevel=1`) was flat (0.56-0.76) but fell behind at 200,000/s, so the full "
    "run warms up 10 s and the switch no longer flushes.",
    "(e) fast sink in the full run on bdc4a2f (2026-12-04; rates 49,084, 98,168 and 147,252/s): "
    "p99 sharesink / classic 1.14, 4.12 and 0.5, and at the two lower rates the single runs' "
    "p99 overlapped (11.5-20.6 ms against 12.6-186.3; 64.5-109.8 against 13.0-77.9). At "
    "98,168/s, 1% of a run's records is 0.19 s of them, so one episode of 0.3-0.4 s sets the "
    "p99: each 0.5 row's median run had one episode near 3 s in (sharesink 2.99 s for 0.34 s "
    "and 3.74 s for 0.41 s in two runs, classic 3.03 s for 0.38 s in one), with both cores "
    "1.85-2.0 busy and the producer at 0.89-1.06 cores in them; the runs without such an episode "
    "had p99 13.0 (classic) and 64.5 ms (sharesink, five shorter episodes). At 147,252/s "
    "sharesink's runs stayed lower (129-230 ms against 76-519). So this run's worst ratio is "
    "whether a 0.3 s episode fell in a run, not a steady difference. In this run a window the "
    "load timeline had no sample after was averaged as idle (fixed in 6f2e33d), so some rows' "
    "`rest` loads read low (0.3, 0.49 and 0.74 busy cores against 1.64-1.93 for the whole run); "
    "the in-episode figures are unaffected.",
]


def _spread(r: Dict) -> str:
    if (r.get("rounds") or 1) <= 1:
        return ""
    return (f" ({_fmt(r['records_per_s_min'])}–{_fmt(r['records_per_s_max'])}, "
            f"median of {r['rounds'] - r.get('failed_rounds', 0)})")


def _load(v) -> str:
    return ", ".join(f"{x:.1f}" for x in v) if v else "?"


def _verdict(k: str, v: Any, res: Dict) -> str:
    if v is None:
        return ""
    try:
        if k in ("engine_vs_java_share_1m", "engine_vs_java_share_4m"):
            ok = v >= 4
        elif k in ("engine_vs_krafka_1m", "engine_vs_franz_1m", "engine_vs_franz_4m"):
            ok = v > 1
        elif k == "engine_vs_classic_ceiling":
            ok = v >= 0.6
        elif k == "engine_cpu_per_record_vs_java":
            ok = v <= 1 / 3
        elif k == "jni_vs_engine":
            ok = v >= 0.9
        elif k == "connect_beyond_partitions":
            ok = v >= 3.5
        elif k == "connect_stalled_task_loss":
            ok = v <= 1 / max(1, res.get("connect", {}).get("share_tasks", 12))
        elif k == "connect_task_change_gap_ms_share":
            ok = v < 1000
        elif k == "connect_overhead":
            ok = v >= 1.0
        elif k == "latency_p99_share_vs_classic_worst":
            ok = v <= 1
        else:
            return ""
    except TypeError:
        return ""
    return "met" if ok else "**missed**"


# ---------------------------------------------------------------------------------------------
# chart


def chart(res: Dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in res.get("consumer_summary", []) if "error" not in r]
    fig, grid = plt.subplots(2, 3, figsize=(20, 10.5),
                             gridspec_kw={'width_ratios': [2.6, 1.6, 2.0]})
    axes = [grid[0][0], grid[0][1], grid[0][2], grid[1][0], grid[1][1], grid[1][2]]
    colors = {"engine": "#1f77b4", "java": "#d62728", "krafka": "#ff7f0e", "franz": "#9467bd",
              "classic": "#7f7f7f", "jni": "#2ca02c", "engine-copy": "#17becf"}
    # records/s per client, 100 B and 1 KiB
    ax = axes[0]
    labels, vals, cols = [], [], []
    for size in (100, 1024):
        for c, mm in (("engine", 1), ("java", 1), ("krafka", 1), ("franz", 1), ("engine", 4),
                      ("java", 4), ("krafka", 4), ("franz", 4), ("classic", 1)):
            r = _find(runs, c, mm, size)
            if r:
                labels.append(f"{c} {mm}m\n{size}B")
                vals.append(r["records_per_s"] / 1000)
                cols.append(colors[c])
    for r in res.get("jni_summary", []):
        if "error" not in r:
            name = {"jni": "JNI", "engine-copy": "engine,\ncopying"}.get(r["client"], "engine")
            labels.append(f"{name}\n(JNI trio)")
            vals.append(r["records_per_s"] / 1000)
            cols.append(colors[r["client"]])
    if not vals:
        ax.text(0.5, 0.5, "consumers: not run", ha="center", va="center", transform=ax.transAxes)
    ax.bar(range(len(vals)), vals, color=cols)
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, fontsize=6.5, rotation=60)
    ax.set_ylabel("thousand records/s (first record to last)")
    ax.set_title("Consumers: throughput")
    # CPU per million records
    ax = axes[1]
    labels, vals, cols = [], [], []
    for c, mm in (("engine", 1), ("java", 1), ("krafka", 1), ("franz", 1), ("engine", 4),
                  ("java", 4), ("krafka", 4), ("franz", 4), ("classic", 1)):
        r = _find(runs, c, mm, 100)
        if r and r.get("cpu_s_per_m_steady") is not None:
            labels.append(f"{c} {mm}m")
            vals.append(r["cpu_s_per_m_steady"])
            cols.append(colors[c])
    if not vals:
        ax.text(0.5, 0.5, "consumers: not run", ha="center", va="center", transform=ax.transAxes)
    ax.bar(range(len(vals)), vals, color=cols)
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, fontsize=8, rotation=45)
    ax.set_ylabel("CPU seconds per million records (100 B, steady)")
    ax.set_title("Consumers: CPU per record")
    # connect: sharesink / classic ratios with their targets
    ax = axes[2]
    cres = res.get("connect", {}).get("results", {})

    def rv(k, f):
        r = cres.get(k) or {}
        return None if r.get("error") else r.get(f)

    def ratio(a, b):
        return a / b if a and b else None
    bars = [("(a) slow sink\n12 vs 3 tasks", ratio(rv("a_share", "rows_per_s"), rv("a_classic", "rows_per_s")), 3.5),
            ("(b) rows/s kept\nduring a stall", None if rv("b_share", "loss") is None else 1 - rv("b_share", "loss"),
             1 - 1 / 12),
            ("(b) classic\nduring a stall", None if rv("b_classic", "loss") is None else 1 - rv("b_classic", "loss"), None),
            ("(d) fast sink\nshare/classic", ratio(rv("d_share", "records_per_s"), rv("d_classic", "records_per_s")), 1.0),
            ("(d') window\n2000", ratio(rv("d_share_window_2000", "records_per_s"), rv("d_classic", "records_per_s")), None)]
    bars = [b for b in bars if b[1] is not None]
    if bars:
        xs = list(range(len(bars)))
        ax.bar(xs, [b[1] for b in bars], color=["#1f77b4" if "classic" not in b[0] else "#7f7f7f" for b in bars])
        for x, b in zip(xs, bars):
            if b[2] is not None:
                ax.plot([x - 0.4, x + 0.4], [b[2], b[2]], color="black", linestyle="--")
            ax.text(x, b[1], f"{b[1]:.2f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(xs)
        ax.set_xticklabels([b[0] for b in bars], fontsize=7)
        ax.set_ylabel("ratio (dashed: target)")
        ax.set_title("Connect: sharesink vs classic")
    else:
        ax.text(0.5, 0.5, "Connect: not run", ha="center", va="center")
        ax.set_axis_off()
    ax = axes[3]
    gc, gs = rv("c_classic", "gap_ms"), rv("c_share", "gap_ms")
    if gc is not None or gs is not None:
        ax.bar([0, 1], [gc or 0, gs or 0], color=["#7f7f7f", "#1f77b4"])
        ax.axhline(1000, color="black", linestyle="--")
        ax.set_xticks([0, 1])
        ax.set_xticklabels(["classic", "sharesink"])
        ax.set_ylabel("longest interval without a row written (ms)")
        ax.set_title("(c) tasks.max 2 → 3 mid-run")
    else:
        ax.text(0.5, 0.5, "(c): not run", ha="center", va="center")
        ax.set_axis_off()
    _latency_panel(axes[4], res)
    _scale_panel(axes[5], res)
    fig.suptitle(f"sharesink benchmarks ({res.get('mode')} mode, "
                 f"{res.get('machine', {}).get('nproc')} cores, {res.get('machine', {}).get('date_utc')})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _latency_panel(ax, res: Dict[str, Any]) -> None:
    """(e): p99 produce-to-written latency per rate, classic beside sharesink (log scale)."""
    rows = []
    for sink, fracs in (("fast", (25, 50, 75)), ("slow", (50, 150))):
        for pct in fracs:
            cl = res.get(f"latency_{sink}_{pct}_classic_p99_ms")
            sh = res.get(f"latency_{sink}_{pct}_share_p99_ms")
            if cl is not None or sh is not None:
                rows.append((f"{'FileStream' if sink == 'fast' else 'JDBC'}\n{pct / 100:g}x", cl, sh))
    if not rows:
        ax.text(0.5, 0.5, "(e): not run", ha="center", va="center")
        ax.set_axis_off()
        return
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r[1] or 0 for r in rows], width=0.4, color="#7f7f7f",
           label="classic")
    ax.bar([x + 0.2 for x in xs], [r[2] or 0 for r in rows], width=0.4, color="#1f77b4",
           label="sharesink")
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r[0] for r in rows], fontsize=8)
    ax.set_ylabel("p99 produce → written (ms, log)")
    ax.set_title("(e) latency at fixed rates (x classic's sustained rate)")
    ax.legend(fontsize=8)


def _scale_panel(ax, res: Dict[str, Any]) -> None:
    """(f): rows/s against the ideal for 12, 50 and 100 tasks on 12 partitions."""
    rows = [(n, res.get(f"scale_{n}_tasks_of_ideal")) for n in (12, 50, 100)]
    rows = [r for r in rows if r[1] is not None]
    if not rows:
        ax.text(0.5, 0.5, "(f): not run", ha="center", va="center")
        ax.set_axis_off()
        return
    xs = range(len(rows))
    ax.bar(list(xs), [r[1] for r in rows], color="#1f77b4")
    ax.axhline(0.9, color="black", linestyle="--")
    for x, r in zip(xs, rows):
        ax.text(x, r[1], f"{r[1]:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r[0]} tasks" for r in rows])
    ax.set_ylabel("rows/s ÷ ideal (dashed: 0.9)")
    ax.set_title("(f) 12 partitions, many more tasks")


def _fallback_png(res: Dict[str, Any], path: Path) -> None:
    """A bare bar chart (records/s of each consumer run) without matplotlib."""
    runs = [r for r in res.get("consumer_summary", []) if "error" not in r]
    vals = [r["records_per_s"] for r in runs] or [0]
    w, h = max(200, 30 * len(vals) + 20), 300
    top = max(vals) or 1
    px = [[(255, 255, 255)] * w for _ in range(h)]
    palette = {"engine": (31, 119, 180), "java": (214, 39, 40), "krafka": (255, 127, 14),
               "franz": (148, 103, 189), "classic": (127, 127, 127)}
    for i, r in enumerate(runs):
        bh = int((h - 20) * r["records_per_s"] / top)
        for y in range(h - 10 - bh, h - 10):
            for x in range(10 + 30 * i, 10 + 30 * i + 22):
                px[y][x] = palette.get(r["client"], (0, 0, 0))
    raw = b"".join(b"\x00" + bytes(c for p in row for c in p) for row in px)

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
        chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(png)


if __name__ == "__main__":
    import sys
    r = json.loads(Path(sys.argv[1]).read_text())
    derive(r)
    write(r, Path(sys.argv[1]).parent, Path(sys.argv[2]))
