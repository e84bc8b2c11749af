"""Ratios (results.json keys), docs/benchmarks/RESULTS.md and the PNG chart.

The prose of RESULTS.md is in Markdown beside this file, in bench/report/: methods.md (how each
part was measured), findings.md (the findings, filled in with a run's figures) and profiles.md
(profiles of earlier runs, copied as they are)."""

from __future__ import annotations

import collections
import json
import struct
import zlib
from pathlib import Path
from typing import Any, Dict, List, Optional

import cost

TEXT_DIR = Path(__file__).resolve().parent / "report"


def _sections(path: Path) -> Dict[str, str]:
    """{name: text} of a Markdown file of `## name` sections, each text's lines joined by single
    spaces (the lines before the first section are notes for its editors)."""
    out: Dict[str, List[str]] = {}
    name = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            if name in out:
                raise ValueError(f"{path}: section {name} twice")
            out[name] = []
        elif name is not None and line.strip():
            out[name].append(line.strip())
    return {k: " ".join(v) for k, v in out.items()}


def _list_items(path: Path) -> List[str]:
    """The items of a Markdown list (`- ` and lines indented under it), each as one line."""
    items: List[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("- "):
            items.append(line[2:].strip())
        elif items and line.startswith("  ") and line.strip():
            items[-1] += " " + line.strip()
    return items


TEXTS = {**_sections(TEXT_DIR / "methods.md"), **_sections(TEXT_DIR / "findings.md")}
# Profiles taken on the benchmark machine and what they led to (commits on main). Unlike the
# findings, a record of past runs, not regenerated from a run's figures.
PROFILES = _list_items(TEXT_DIR / "profiles.md")


def _t(name: str, **figures: Any) -> str:
    """Section `name` of methods.md or findings.md, filled in with `figures`."""
    return TEXTS[name].format(**figures)


KEYS = ["engine_vs_java_share_1m", "engine_vs_java_share_4m", "engine_vs_krafka_1m",
        "engine_vs_franz_1m", "engine_vs_franz_4m", "engine_vs_classic_ceiling",
        "engine_cpu_per_record_vs_java", "jni_vs_engine",
        "connect_beyond_partitions", "connect_stalled_task_loss",
        "connect_task_change_gap_ms_share", "connect_task_change_gap_ms_classic",
        "connect_overhead", "latency_p99_share_vs_classic_worst",
        "autoscale_drain_vs_fixed_max", "autoscale_task_seconds_vs_fixed_max",
        "cost_d_broker_cpu_share_vs_java_share", "cost_d_empty_share_fetch_share",
        "cost_a_share_fetches_per_row", "cost_broker_jit_share_max",
        "connect_d_ack_on_fetch_vs_ack_first", "cost_d_broker_cpu_ack_on_fetch_vs_ack_first",
        "cost_t_broker_cpu_share_vs_plain_without_jit", "cost_t_broker_jit_share_max",
        "t_aborted_written", "cost_t_broker_cpu_share_vs_plain",
        "cost_t_broker_cpu_share_vs_java_share_without_jit",
        "cost_t_broker_cpu_adaptive_vs_fixed_fetch_without_jit", "cost_t_state_topic_records_share_vs_plain",
        "connect_txn_overhead", "connect_txn_vs_plain"]

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
    "autoscale_drain_vs_fixed_max": "<= 1.15 (issue 34)",
    "autoscale_task_seconds_vs_fixed_max": "<= 0.6 (issue 34)",
    "cost_d_broker_cpu_share_vs_java_share": "<= 0.7 (issue 43)",
    "cost_d_empty_share_fetch_share": "<= 0.1 (issue 43)",
    "cost_a_share_fetches_per_row": "<= 0.5 (issue 43)",
    "cost_broker_jit_share_max": "< 0.1 (issue 43: the windows measure warm brokers)",
    "connect_d_ack_on_fetch_vs_ack_first":
        "(reference: (d'') acknowledgements on the fetch, records/s against (d))",
    "cost_d_broker_cpu_ack_on_fetch_vs_ack_first":
        "(reference: (d'') broker CPU per record against (d))",
    "cost_t_broker_cpu_share_vs_plain_without_jit":
        "<= 1.2 (issue 54: (dt) broker CPU per committed record against (d)'s per record, "
        "without JIT)",
    "cost_t_broker_jit_share_max": "< 0.1 (issue 54: the (dt) windows measure warm brokers)",
    "t_aborted_written": "= 0 (issue 54: no share-mode run writes an aborted record)",
    "cost_t_broker_cpu_share_vs_plain": "(reference: the same with JIT)",
    "cost_t_broker_cpu_share_vs_java_share_without_jit":
        "(reference: (dt) against KafkaShareConsumer on the transactional topic)",
    "cost_t_broker_cpu_adaptive_vs_fixed_fetch_without_jit":
        "(reference: (dt), fetches sized to the records, against (dt'), fixed at fetch.max.bytes)",
    "cost_t_state_topic_records_share_vs_plain":
        "(reference: `__share_group_state` records per record, (dt) against (d))",
    "connect_txn_overhead": "(reference: (dt) sharesink ÷ classic, committed records/s)",
    "connect_txn_vs_plain": "(reference: (dt) sharesink records/s against (d) sharesink's)",
}


def _jni_thread_split(runs: List[Dict[str, Any]], engine_alone: Optional[float]) -> str:
    """Where the JNI bench's CPU went, by thread group, mean over its runs ('' when unmeasured)."""
    splits = [r["cpu_s_per_m_by_thread"] for r in runs
              if r.get("client") == "jni" and r.get("cpu_s_per_m_by_thread")]
    if not splits:
        return ""
    mean = {k: round(sum(s.get(k, 0.0) for s in splits) / len(splits), 3) for k in splits[0]}
    above = engine_alone is not None and mean["engine"] > engine_alone
    return " " + _t("jni_by_thread", runs=len(splits), **mean) + (
        " " + _t("jni_native_above_engine") if above else "")


def _jni_without_jvm(res: Dict[str, Any], copy: Optional[Dict], jni: Dict) -> str:
    """What the engine-copy runs (the JNI path without a JVM) say about the JNI gap."""
    ratio = res.get("engine_copy_vs_engine")
    if copy is None or ratio is None:
        return ""
    txt = " " + _t("jni_without_jvm", ratio=ratio, copy_min=_fmt(copy.get("records_per_s_min")),
                   copy_max=_fmt(copy.get("records_per_s_max")),
                   copy_cpu=_fmt(copy.get("cpu_s_per_m_steady")),
                   jni_vs_copy=res.get("jni_vs_engine_copy"),
                   jni_cpu=_fmt(jni.get("cpu_s_per_m_steady")))
    if ratio >= 0.95:
        txt += " " + _t("jni_without_jvm_cheap")
    else:
        txt += " " + _t("jni_without_jvm_costly", cost=1 - ratio)
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
    # what the runs cost the brokers per million records (bench/cost.py)
    cost.derive(res)
    for k in KEYS:
        if k.startswith("cost_") and res.get(k) is None:
            _set(res, k, None, "not measured in this run (its scenario or client did not run)")
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
             f"{m.get('krafka')}, franz-go {m.get('franz_go', '?')}, Python {m.get('python')}, "
             f"sharesink at `{m.get('git')}`.")
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
        shown = _fmt(v) if v is not None else "not run: " + str(res.get(k + "_reason", "?"))[:300]
        L.append(f"| `{k}` | {shown} "
                 f"| {TARGETS[k]} | {_verdict(k, v, res)} |")
    L.append("")
    runs = res.get("consumer_summary", [])
    if runs:
        L.append("## 1. Share consumers on one topic (6 partitions)")
        L.append("")
        L.append(_t("consumers_settings"))
        L.append("")
        L.append(_t("consumers_clocks"))
        L.append("")
        L.append("| record | client | members | records | records/s steady | MB/s | "
                 "records/s incl. start | join s | CPU s/M steady | CPU s/M process | broker CPU s/M |")
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
        L.append(_t("jni_method"))
        L.append("")
        L.append("| client | records/s | MB/s | CPU s/M steady | CPU s/M process | join s |")
        L.append("|---|---|---|---|---|---|")
        for r in jr:
            if "error" in r:
                L.append(f"| {r['client']} | failed: {str(r['error'])[:300]} | | | | |")
            else:
                L.append(f"| {r['client']} | **{_fmt(r['records_per_s'])}**{_spread(r)} | "
                         f"{_fmt(r['mb_per_s'])} | "
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
        L.append(_t("latency_method", fast_rate=basis.get("fast_records_per_s", 0),
                    fast_from=basis.get("fast_from"), slow_rate=basis.get("slow_rows_per_s", 0),
                    slow_from=basis.get("slow_from")))
        L.append("")
        _md_table(L, ["rate", "classic p50 / p99 / p99.9 / max",
                      "sharesink p50 / p99 / p99.9 / max", "p99 sharesink ÷ classic",
                      "CPU s per M records written, sharesink vs classic"],
                  [row + [""] * (5 - len(row)) for row in cs["latency_rows"]])
    if cs.get("scale_rows"):
        basis = res.get("scale_basis", {})
        L.append("### (f) Many more tasks than partitions: sharesink on a 12-partition topic")
        L.append("")
        L.append(_t("scale_method", per_task=basis.get("per_task_rows_per_s"),
                    basis_from=basis.get("from")))
        L.append("")
        _md_table(L, ["tasks", "rows/s of ideal", "machine CPU busy", "worker RSS MiB",
                      "heap used MiB", "engine off-heap MiB", "threads per task",
                      "broker connections per task", "s to RUNNING"], cs["scale_rows"])
    if (cs.get("autoscale") or {}).get("runs"):
        _autoscale_section(L, res, cs["autoscale"])
    if res.get("cost"):
        L.append("### What reading the records costs the brokers, per million records")
        L.append("")
        L.append(_t("cost_method", jit_max=cost.JIT_SHARE_MAX))
        L.append("")
        _md_table(L, cost.TABLE_HEADER, cost.table_rows(res))
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


def _autoscale_section(L: List[str], res: Dict[str, Any], g: Dict[str, Any]) -> None:
    """(g): autoscaled vs fixed tasks.max at the maximum and at the minimum."""
    L.append("### (g) Autoscaling: a burst then a trickle")
    L.append("")
    L.append(
        f"The slow sink of (a) (Debezium JDBC, 20 ms trigger per row, one record per put) on a "
        f"fresh 3-partition topic per run. `bench/peers/rate-producer` sends "
        f"{g['trickle_per_s']:g} rows/s throughout (what {g['min']} tasks carry with room to "
        f"spare); {g['quiet_s']} s in, a second one sends a burst of {g['burst']:,} records "
        f"flat out; the trickle goes on until {g['after_s']} s after the burst. Three runs: "
        f"sharesink with `share.tasks.autoscale=true`, `share.tasks.autoscale.min={g['min']}`, "
        f"`tasks.max={g['max']}` and the autoscaler's other settings at their defaults; fixed "
        f"`tasks.max={g['max']}`; fixed `tasks.max={g['min']}`. **Drain** = the burst's first "
        "record to the moment every record produced up to its last was written (rows' "
        "`written_at`). **Task-seconds** = the connector's RUNNING tasks (REST status every "
        "0.5 s) summed over the run, from the trickle's first record until every record was "
        f"written. The fixed minimum is cut {g['min_cap_s']} s after the burst: its drain is "
        "extrapolated from the net rate it drained at, and its task-seconds run to that end.")
    L.append("")
    rows = []
    for mode, label in (("auto", f"autoscaled {g['min']}–{g['max']}"),
                        ("max", f"fixed {g['max']}"), ("min", f"fixed {g['min']}")):
        r = g["runs"].get(mode) or {}
        if r.get("error"):
            rows.append([label, "failed: " + r["error"][:200], "", "", ""])
            continue
        drain = _fmt(r.get("drain_s"), " s") + (" (extrapolated)" if r.get("drain_extrapolated")
                                                 else "")
        tl = ", ".join(f"{t:g} s: {n}" for t, n in (r.get("tasks_timeline") or [])[:12])
        load = r.get("load_avg_1m") or [None, None]
        rows.append([label, drain, f"{_fmt(r.get('task_seconds'))} over {_fmt(r.get('run_s'))} s",
                     _fmt(r.get("mean_tasks")), _fmt(r.get("rows_per_s_at_most_tasks")),
                     f"{_fmt(load[0])} → {_fmt(load[1])}", tl])
    _md_table(L, ["run", "drain", "task-seconds", "mean tasks",
                  "rows/s at its most tasks, draining", "load average (1 min), start → end",
                  "RUNNING tasks (s from the burst: count)"], rows)
    steps = ((g["runs"].get("auto") or {}).get("steps")) or []
    if steps:
        L.append("Reconfigurations of the autoscaled run (from the worker's log), each a "
                 "restart of all the connector's tasks by Connect:")
        L.append("")
        _md_table(L, ["to", "s to all RUNNING", "longest time without a row, 15 s from the "
                      "decision", "why"],
                  [[st["to"], _fmt(st.get("s_to_running")), _fmt(st.get("longest_gap_ms"), " ms"),
                    st.get("why", "")] for st in steps])
    for f in _autoscale_profile(res, g):
        L.append(f"- {f}")
    L.append("")
    L.append(f"Drain ÷ fixed maximum: **{_fmt(res.get('autoscale_drain_vs_fixed_max'))}** "
             f"(goal ≤ {g['goal_drain']}); task-seconds ÷ fixed maximum: "
             f"**{_fmt(res.get('autoscale_task_seconds_vs_fixed_max'))}** (goal ≤ "
             f"{g['goal_task_seconds']}).")
    L.append("")


def _autoscale_profile(res: Dict[str, Any], g: Dict[str, Any]) -> List[str]:
    """Where the autoscaled run's drain time and task-seconds went, against the fixed maximum."""
    a, m = g["runs"].get("auto") or {}, g["runs"].get("max") or {}
    if a.get("error") or m.get("error") or a.get("drain_s") is None or m.get("drain_s") is None:
        return []
    out = []
    steps = a.get("steps") or []
    up = next((st for st in steps if st.get("to") == g["max"]), None)
    if up and up.get("s_after_burst") is not None:
        ready = up["s_after_burst"] + (up.get("s_to_running") or 0)
        ra, rm = a.get("rows_per_s_at_most_tasks"), m.get("rows_per_s_at_most_tasks")
        if ra and rm:
            # the drain the autoscaled run would have had at the fixed run's rate: its start-up,
            # then the burst at the fixed maximum's rows/s
            same = ready + max(0.0, m["drain_s"] - (m.get("s_to_most_tasks") or 0))
            out.append(
                f"Rate: once {g['max']} tasks ran, the autoscaled run wrote {ra:g} rows/s while "
                f"draining and the fixed maximum {rm:g} ({ra / rm:.2f}×; load averages "
                f"{(a.get('load_avg_1m') or ['?'])[0]} and {(m.get('load_avg_1m') or ['?'])[0]} "
                f"at their starts). At the fixed run's rate, the autoscaled drain would have "
                f"taken about {same:.0f} s ({same / m['drain_s']:.2f}× the fixed maximum's).")
        out.append(
            f"Drain: the autoscaler decided on {g['max']} tasks {up['s_after_burst']:g} s after "
            f"the burst's first record (readings every 5 s; a rate needs two), and "
            f"{g['max']} tasks ran {_fmt(up.get('s_to_running'))} s later ({ready:.1f} s after the "
            f"burst, {g['min']} tasks draining meanwhile); it drained in {a['drain_s']:g} s "
            f"against {m['drain_s']:g} s for the fixed maximum, {a['drain_s'] - m['drain_s']:+.1f} s.")
    down = next((st for st in steps if st.get("to", g["max"]) < g["max"]
                 and (st.get("s_after_burst") or 0) > a["drain_s"]), None)
    if down:
        held = down["s_after_burst"] - a["drain_s"]
        out.append(
            f"Task-seconds: after the burst drained, the autoscaled run kept its tasks "
            f"{held:.0f} s (the scale-down window, 60 s, of readings without a backlog, and the "
            f"reading cadence) before going to {down['to']}; at {g['max']} tasks that is about "
            f"{held * (g['max'] - down['to']):,.0f} task-seconds of its {_fmt(a.get('task_seconds'))} "
            f"(fixed maximum: {_fmt(m.get('task_seconds'))}). The ratio falls as the trickle after "
            f"the burst gets longer ({g['after_s']} s here).")
    return out


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
        out.append(_t("shared_machine", load=load, nproc=m.get("nproc")))
    runs = res.get("consumer_summary", [])
    e1, j1, c1 = _find(runs, "engine", 1), _find(runs, "java", 1), _find(runs, "classic", 1)
    e4 = _find(runs, "engine", 4)
    if e1 and j1 and e1.get("cpu_s_per_m_steady") and j1.get("cpu_s_per_m_steady"):
        out.append(_t("cpu_per_record", e_steady=e1["cpu_s_per_m_steady"],
                      j_steady=j1["cpu_s_per_m_steady"], e_process=e1["cpu_s_per_m_process"],
                      j_process=j1["cpu_s_per_m_process"]))
    if e1 and j1 and c1 and (res.get("engine_vs_java_share_1m") or 99) < 4:
        ceiling = res.get('engine_vs_classic_ceiling') or 0
        beyond = 4 * j1['records_per_s'] > c1['records_per_s']
        out.append(_t("below_4x", e_rate=e1["records_per_s"], ceiling=ceiling,
                      c_rate=c1["records_per_s"],
                      ceiling_note=_t("below_4x_ceiling_under_1" if ceiling < 1
                                      else "below_4x_ceiling_reached"),
                      j_rate=j1["records_per_s"], j_rate_x4=4 * j1["records_per_s"],
                      beyond_classic=_t("below_4x_beyond_classic") if beyond else "",
                      e_cpu=e1["cpu_s_per_m_steady"], j_cpu=j1["cpu_s_per_m_steady"])
                   + _fetch_wait(e1))
    if e1 and c1 and e1.get("broker_cpu_s_per_m") is not None and c1.get("broker_cpu_s_per_m"):
        four = _t("broker_cost_four_members", ceiling4=res.get("engine_4m_vs_classic_ceiling"))
        out.append(_t("broker_cost", e_broker=e1["broker_cpu_s_per_m"],
                      c_broker=c1["broker_cpu_s_per_m"], four_members=four if e4 else ""))
    jr = res.get("jni_summary", [])
    je, jj = _find(jr, "engine", 1), _find(jr, "jni", 1)
    if res.get("jni_vs_engine") is not None and je and jj:
        out.append(_t("jni_vs_engine", ratio=res["jni_vs_engine"],
                      jni_min=_fmt(jj.get("records_per_s_min")),
                      jni_max=_fmt(jj.get("records_per_s_max")),
                      e_min=_fmt(je.get("records_per_s_min")),
                      e_max=_fmt(je.get("records_per_s_max")),
                      jni_cpu=_fmt(jj.get("cpu_s_per_m_steady")),
                      e_cpu=_fmt(je.get("cpu_s_per_m_steady")))
                   + _jni_thread_split(res.get("jni_runs", []), je.get("cpu_s_per_m_steady"))
                   + _jni_without_jvm(res, _find(jr, "engine-copy", 1), jj))
    cres = res.get("connect", {}).get("results", {})
    a_cl, a_sh = cres.get("a_classic") or {}, cres.get("a_share") or {}
    if a_sh.get("rows_per_s") and a_cl.get("rows_per_s"):
        busy = a_sh.get("machine_busy")
        txt = _t("a_slow_sink", share_rows=a_sh["rows_per_s"], tasks=a_sh["tasks"],
                 classic_rows=a_cl["rows_per_s"], ideal=a_sh["tasks"] / 3)
        if busy is not None and busy > 0.9:
            txt += " " + _t("a_cpu_bound", busy=busy, share_worker=a_sh.get("worker_cpu_s"),
                            share_broker=a_sh.get("broker_cpu_s"),
                            window=a_sh.get("window_wall_s"),
                            classic_worker=a_cl.get("worker_cpu_s"),
                            classic_broker=a_cl.get("broker_cpu_s"))
        txt += _slow_requests(a_sh, a_cl)
        out.append(txt)
    b_sh, b_cl = cres.get("b_share") or {}, cres.get("b_classic") or {}
    if b_sh.get("loss") is not None and b_cl.get("loss") is not None:
        txt = _t("b_stalled_task", share_loss=b_sh["loss"], one_in_n=1 / b_sh["tasks"],
                 classic_loss=b_cl["loss"])
        if b_sh["loss"] > 1 / b_sh["tasks"]:
            rate = b_sh.get("rows_per_s_before") or 0
            parts = 3
            window = SHARE_DEFAULT_WINDOW
            secs = window / (rate / parts) if rate else None
            peers = b_sh["tasks"] // parts - 1
            idle = _t("b_idle", secs=secs, per_partition=rate / parts) if secs else ""
            txt += " " + _t("b_above_one_in_n", peers=peers, stall_s=b_sh.get("stall_s"),
                            window=window, idle=idle)
            b_w = cres.get("b_share_window") or {}
            if b_w.get("loss") is not None:
                window = (b_w.get("settings") or {}).get("share.partition.max.record.locks")
                txt += " " + _t("b_larger_window", window=window or "a larger value",
                                loss=b_w["loss"], stall_s=b_w.get("stall_s"))
            txt += " " + _t("b_bound")
        else:
            txt += " " + _t("b_cpu_bound")
        out.append(txt)
    c_sh, c_cl = cres.get("c_share") or {}, cres.get("c_classic") or {}
    if c_sh.get("gap_ms") is not None and c_cl.get("gap_ms") is not None:
        out.append(_t("c_task_change", share_gap=c_sh["gap_ms"],
                      share_after=c_sh.get("gap_starts_after_change_s"),
                      classic_gap=c_cl["gap_ms"],
                      classic_after=c_cl.get("gap_starts_after_change_s"),
                      share_median=c_sh.get("median_gap_ms"),
                      classic_median=c_cl.get("median_gap_ms")))
    d_sh, d_cl = cres.get("d_share") or {}, cres.get("d_classic") or {}
    if d_sh.get("records_per_s") and d_cl.get("records_per_s"):
        busy = d_sh.get("machine_busy")
        n = d_sh.get("records") or 0
        per_m = _per_m
        txt = _t("d_fast_sink", share_rate=d_sh["records_per_s"],
                 classic_rate=d_cl["records_per_s"], overhead=res.get("connect_overhead"),
                 share_worker=per_m(d_sh, "worker_cpu_s"),
                 classic_worker=per_m(d_cl, "worker_cpu_s"),
                 share_broker=per_m(d_sh, "broker_cpu_s"),
                 classic_broker=per_m(d_cl, "broker_cpu_s"), records=n)
        if busy is not None and busy < 0.8:
            txt += " " + _t("d_waiting", busy=busy)
        elif busy is not None:
            txt += " " + _t("d_cpu_bound", busy=busy)
            sh_cpu = [per_m(d_sh, k) for k in ("worker_cpu_s", "broker_cpu_s")]
            cl_cpu = [per_m(d_cl, k) for k in ("worker_cpu_s", "broker_cpu_s")]
            if None not in sh_cpu + cl_cpu and sum(sh_cpu) > 0:
                txt += " " + _t("d_cpu_sum", share_cpu=sum(sh_cpu), classic_cpu=sum(cl_cpu),
                                ratio=sum(cl_cpu) / sum(sh_cpu))
        runs_sh, runs_cl = d_sh.get("runs") or [], d_cl.get("runs") or []
        if len(runs_sh) > 1 and len(runs_cl) == len(runs_sh):
            pairs = [(c.get("records_per_s"), s.get("records_per_s")) for c, s in zip(runs_cl, runs_sh)]
            txt += " " + _t("d_runs", pairs="; ".join(
                f"{_fmt(c)} / {_fmt(s)}" + (f" ({s / c:.2f})" if c and s else "") for c, s in pairs))
        txt += _cpu_by_thread(d_sh, d_cl)
        txt += _engine_round_trips(d_sh) + _broker_requests(d_sh, d_cl)
        warm = [w for w in cres.get("d_warmup") or [] if w.get("records_per_s")]
        if warm:
            shares = [w for w in warm if w["runtime"] == "share"]
            classic = [w for w in warm if w["runtime"] == "classic"]
            txt += " " + _t("d_warmup",
                            classic=", ".join(f"{w['records_per_s']:,}" for w in classic),
                            share=", ".join(f"{w['records_per_s']:,}" for w in shares),
                            jit=", ".join(str(w.get("broker_jit_cpu_s")) for w in shares))
        others = [(k, r) for k, r in cres.items()
                  if k.startswith("d_share_") and isinstance(r, dict) and r.get("records_per_s")]
        for k, r in others:
            settings = ", ".join(f"`{a}={b}`" for a, b in (r.get("settings") or {}).items())
            txt += " " + _t("d_other_settings", settings=settings or "other settings",
                            rate=r["records_per_s"],
                            of_classic=round(r["records_per_s"] / d_cl["records_per_s"], 3))
        out.append(txt)
    pinned = _fast_on_own_cores(cres)
    if pinned:
        out.append(pinned)
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
            worst = "; ".join(_t("e_episode", **w) for w in e.get("worst", []))
            per.append(_t("e_episodes_runtime", label=label, threshold_ms=e["threshold_ms"],
                          late_records=e["late_records"], episodes=e["episodes"],
                          episodes_s=e["episodes_s"], span_s=e["span_s"], worst=worst,
                          load=_load_text(e["load_in_episodes"], e["load_rest"])))
        if per:
            cells.append(_t("e_episodes_rate", rate=frac / 100, runtimes=" | ".join(per)))
    if not cells:
        return ""
    return _t("e_episodes", cells="; ".join(cells))


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
        cells.append(_t(
            "e_p99_above_rate", rate=frac / 100,
            share_p50_low=p50["share"][0], share_p50_high=p50["share"][-1],
            classic_p50_low=p50["classic"][0], classic_p50_high=p50["classic"][-1],
            share_p99_low=p99["share"][0], share_p99_high=p99["share"][-1],
            classic_p99_low=p99["classic"][0], classic_p99_high=p99["classic"][-1],
            overlap=_t("e_p99_overlap" if overlap else "e_p99_no_overlap")))
    if not cells:
        return ""
    return _t("e_p99_above", cells="; ".join(cells))


def _fetch_wait(run: Dict[str, Any]) -> str:
    """How much of an engine run its share session spent waiting for ShareFetch answers ('' when
    the run did not report its fetches)."""
    fetches, avg = run.get("fetches"), run.get("fetch_avg_ms")
    if not fetches or avg is None or not run.get("records_per_s"):
        return ""
    secs = run["records"] / run["records_per_s"]
    return " " + _t("fetch_wait", fetches=fetches, per_fetch=run["records"] // fetches, avg=avg,
                    waiting=min(1.0, fetches * avg / 1000 / secs))


def _fast_latency_cpu(cres: Dict[str, Any]) -> str:
    """(e) fast sink: the broker's CPU per record while producer and sink run together, beside
    the backlog of (d), where no producer runs ('' when not measured)."""
    cells = []
    for frac in (25, 50, 75):
        sh, cl = cres.get(f"e_fast_{frac}_share") or {}, cres.get(f"e_fast_{frac}_classic") or {}
        if sh.get("broker_cpu_s_per_m") is None or cl.get("broker_cpu_s_per_m") is None:
            continue
        cells.append(_t("e_broker_cpu_rate", rate=frac / 100, share=sh["broker_cpu_s_per_m"],
                        classic=cl["broker_cpu_s_per_m"], share_busy=sh.get("machine_busy"),
                        classic_busy=cl.get("machine_busy")))
    if not cells:
        return ""
    return _t("e_broker_cpu", cells="; ".join(cells), backlog_gap=_backlog_broker_gap(cres))


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
    # runs recorded before a thread group existed show "?" for it
    bs, bc = (collections.defaultdict(lambda: "?", b) for b in (bs, bc))
    return " " + _t("d_by_thread", bs=bs, bc=bc, ws=ws, wc=wc, share_tasks=ws.get("tasks", "?"),
                    classic_tasks=wc.get("tasks", "?"), share_engine=ws.get("engine", "?"))


def _slow_requests(a_sh: Dict[str, Any], a_cl: Dict[str, Any]) -> str:
    """(a): the requests each broker handled per row written, and the CPU of the window (empty
    when the counts were not read)."""
    def per_row(r: Dict[str, Any]) -> str:
        rows = r.get("rows_when_requests_read")
        reqs = r.get("broker_requests") or {}
        if not rows or not reqs:
            return "not counted"
        return ", ".join(
            f"{b} " + " ".join(f"{k} {v / rows:.2f}" for k, v in sorted(c.items()) if v)
            for b, c in sorted(reqs.items()))
    if not (a_sh.get("broker_requests") or a_cl.get("broker_requests")):
        return ""
    return " " + _t("a_requests", share=per_row(a_sh), classic=per_row(a_cl),
                    busy_sh=a_sh.get("machine_busy") or 0, busy_cl=a_cl.get("machine_busy") or 0,
                    broker_sh=a_sh.get("broker_cpu_s"), broker_cl=a_cl.get("broker_cpu_s"),
                    worker_sh=a_sh.get("worker_cpu_s"), worker_cl=a_cl.get("worker_cpu_s"),
                    engine=_slow_engine(a_sh))


def _slow_engine(a_sh: Dict[str, Any]) -> str:
    e = a_sh.get("engine") or {}
    rows = a_sh.get("rows_when_requests_read")
    if not e.get("fetch_requests") or not rows:
        return ""
    return " " + _t("a_engine", fetches=e["fetch_requests"] / rows,
                    acks=e.get("ack_requests", 0) / rows,
                    empty=(e.get("fetch_requests_empty") or 0) / e["fetch_requests"],
                    fetch_ms=e.get("fetch_latency_avg_ms", "?"),
                    ack_ms=e.get("ack_latency_avg_ms", "?"),
                    resets=e.get("session_resets", "?"))


def _fast_on_own_cores(cres: Dict[str, Any]) -> str:
    """(d*): the (d) pairs with the brokers on one core and the worker on the other."""
    sh, cl = cres.get("dpin_share") or {}, cres.get("dpin_classic") or {}
    if not sh.get("records_per_s") or not cl.get("records_per_s"):
        return ""
    pairs = [(c.get("records_per_s"), s.get("records_per_s"))
             for c, s in zip(cl.get("runs") or [cl], sh.get("runs") or [sh])]
    return _t("dpin", share=sh["records_per_s"], classic=cl["records_per_s"],
              ratio=sh["records_per_s"] / cl["records_per_s"],
              pairs="; ".join(f"{_fmt(c)} / {_fmt(s)}" for c, s in pairs),
              ws=_per_m(sh, "worker_cpu_s"), wc=_per_m(cl, "worker_cpu_s"),
              bs=_per_m(sh, "broker_cpu_s"), bc=_per_m(cl, "broker_cpu_s"),
              busy_sh=sh.get("machine_busy") or 0, busy_cl=cl.get("machine_busy") or 0)


def _engine_round_trips(d_sh: Dict[str, Any]) -> str:
    """What sharesink's engine asked of the brokers over the median (d) run (empty when its
    counters were not read)."""
    e = d_sh.get("engine") or {}
    fetches, seconds = e.get("fetch_requests"), d_sh.get("seconds")
    if not fetches or not seconds:
        return ""
    empty = e.get("fetch_requests_empty") or 0
    records = e.get("records_fetched", 0)
    return " " + _t("d_engine", tasks=d_sh.get("tasks", "?"), fetches=fetches,
                    per_s=fetches / seconds, seconds=seconds, empty=empty,
                    empty_share=empty / fetches,
                    per_fetch=records / max(fetches - empty, 1),
                    acks=e.get("ack_requests", 0), ack_errors=e.get("ack_errors", 0),
                    fetch_ms=e.get("fetch_latency_avg_ms", "?"),
                    ack_ms=e.get("ack_latency_avg_ms", "?"),
                    fetch_ms_tasks=", ".join(map(str, e.get("fetch_latency_avg_ms_per_task", []))),
                    resets=e.get("session_resets", "?"), rejoins=e.get("rejoins", "?"))


def _broker_requests(d_sh: Dict[str, Any], d_cl: Dict[str, Any]) -> str:
    """The requests each broker handled over the median (d) runs, sharesink then classic."""
    sh, cl = d_sh.get("broker_requests") or {}, d_cl.get("broker_requests") or {}
    if not sh or not cl:
        return ""

    def counts(c: Dict[str, int]) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in sorted(c.items()) if v) or "none"

    rows = "; ".join(f"{b}: {counts(sh.get(b, {}))} | {counts(cl.get(b, {}))}"
                     for b in sorted(set(sh) | set(cl)))
    return " " + _t("d_broker_requests", rows=rows)


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
        elif k == "autoscale_drain_vs_fixed_max":
            ok = v <= 1.15
        elif k == "autoscale_task_seconds_vs_fixed_max":
            ok = v <= 0.6
        elif k == "cost_d_broker_cpu_share_vs_java_share":
            ok = v <= 0.7
        elif k == "cost_d_empty_share_fetch_share":
            ok = v <= 0.1
        elif k == "cost_a_share_fetches_per_row":
            ok = v <= 0.5
        elif k in ("cost_broker_jit_share_max", "cost_t_broker_jit_share_max"):
            ok = v < cost.JIT_SHARE_MAX
        elif k == "cost_t_broker_cpu_share_vs_plain_without_jit":
            ok = v <= 1.2
        elif k == "t_aborted_written":
            ok = v == 0
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
    def kept(k):
        return None if rv(k, "loss") is None else 1 - rv(k, "loss")
    bars = [("(a) slow sink\n12 vs 3 tasks",
             ratio(rv("a_share", "rows_per_s"), rv("a_classic", "rows_per_s")), 3.5),
            ("(b) rows/s kept\nduring a stall", kept("b_share"), 1 - 1 / 12),
            ("(b) classic\nduring a stall", kept("b_classic"), None),
            ("(d) fast sink\nshare/classic",
             ratio(rv("d_share", "records_per_s"), rv("d_classic", "records_per_s")), 1.0),
            ("(d') window\n2000",
             ratio(rv("d_share_window_2000", "records_per_s"), rv("d_classic", "records_per_s")), None)]
    bars = [b for b in bars if b[1] is not None]
    if bars:
        xs = list(range(len(bars)))
        ax.bar(xs, [b[1] for b in bars],
               color=["#1f77b4" if "classic" not in b[0] else "#7f7f7f" for b in bars])
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
