"""What reading a topic costs the brokers, per million records: broker CPU (and by thread group,
with the JIT compiler's share of it), ShareFetches (empty ones apart), ShareAcknowledges,
share-state writes and classic Fetches, for each runtime of (a) and (d), for the share consumers
of (d) on the same records (Java's KafkaShareConsumer and sharesink's engine alone), for (dt) (the
fast sink and Java's share consumer on a topic written in transactions, per committed record),
and for the consumer part. The figures come from the runs' CPU windows, each broker's request counts read
over JMX before and after a run, and sharesink's engine counters (bench/connect.py,
bench/run.py); this module only adds them up and divides."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

# The broker's share of the work a run's CPU window may owe to its JIT compiler and still count
# as the steady cost of the records: above it, the figure is mostly a young JVM compiling.
JIT_SHARE_MAX = 0.10

# Requests, as bench/jmx.py counts them, under the names the figures use.
REQUESTS = {"ShareFetch": "share_fetches", "ShareAcknowledge": "share_acknowledges",
            "WriteShareGroupState": "state_writes", "ReadShareGroupState": "state_reads",
            "FetchConsumer": "consumer_fetches", "FetchFollower": "follower_fetches",
            "ShareGroupHeartbeat": "share_heartbeats", "OffsetCommit": "offset_commits",
            "StateTopicRecordsIn": "state_topic_records", "StateTopicBytesIn": "state_topic_bytes"}


def pool(runs: Iterable[Dict[str, Any]], records_key: str = "records",
         request_records_key: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The runs added up into one: records, broker CPU (total and by thread group), each
    request summed over the brokers, sharesink's engine counters. `records_key` is what the CPU
    window saw, `request_records_key` (default the same) what the request counts cover. None
    when no run measured its brokers' CPU."""
    out: Dict[str, Any] = {"runs": 0, "records": 0, "request_records": 0, "broker_cpu_s": 0.0,
                           "by_thread": {}, "requests": {}, "engine": {}, "requests_read": 0}
    for r in runs:
        if not r or r.get("error") or r.get("broker_cpu_s") is None or not r.get(records_key):
            continue
        # (d) counts the brokers' CPU over the later part of each run, when it has it
        # (connect.STEADY_FROM), and the requests over the whole run
        steady = r.get("steady") or {}
        cpu = steady if steady.get("broker_cpu_s") is not None and steady.get("records") else r
        out["runs"] += 1
        out["records"] += cpu["records"] if cpu is steady else r[records_key]
        out["broker_cpu_s"] += cpu["broker_cpu_s"]
        for g, v in (cpu.get("broker_cpu_s_by_thread") or {}).items():
            out["by_thread"][g] = out["by_thread"].get(g, 0.0) + v
        out["engine_records"] = out.get("engine_records", 0) + (
            r.get(request_records_key or records_key) or 0)
        reqs = r.get("broker_requests") or {}
        if reqs:
            out["requests_read"] += 1
            out["request_records"] += r.get(request_records_key or records_key) or 0
            for counts in reqs.values():
                for k, v in counts.items():
                    out["requests"][k] = out["requests"].get(k, 0) + v
        for k, v in (r.get("engine") or {}).items():
            if isinstance(v, (int, float)) and not k.endswith("_ms"):
                out["engine"][k] = out["engine"].get(k, 0) + v
    return out if out["runs"] else None


def figures(p: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Per million records of a pooled set of runs ({} for None): broker CPU and its thread
    groups, the JIT's share of it, each request, and the engine's empty ShareFetches."""
    if not p or not p["records"]:
        return {}
    m = p["records"] / 1e6
    cpu = p["broker_cpu_s"]
    jit = p["by_thread"].get("jit")
    out: Dict[str, Any] = {"records": p["records"], "runs": p["runs"],
                           "broker_cpu_s": round(cpu, 2),
                           "broker_cpu_s_per_m": round(cpu / m, 3),
                           "broker_cpu_s_per_m_by_thread": {g: round(v / m, 3)
                                                            for g, v in p["by_thread"].items()}}
    if jit is not None and cpu > 0:
        out["broker_jit_share"] = round(jit / cpu, 3)
        out["broker_cpu_s_per_m_without_jit"] = round((cpu - jit) / m, 3)
    if p["requests_read"] and p["request_records"]:
        rm = p["request_records"] / 1e6
        for request, name in REQUESTS.items():
            out[f"{name}_per_m"] = round(p["requests"].get(request, 0) / rm, 1)
    e = p["engine"]
    if e.get("fetch_requests"):
        # the engine's own count (the brokers cannot tell an empty ShareFetch from a full
        # one), over the records its counters cover (from the tasks' start)
        em = (p.get("engine_records") or p["records"]) / 1e6
        out["engine_share_fetches_per_m"] = round(e["fetch_requests"] / em, 1)
        out["engine_empty_share_fetches_per_m"] = round(e.get("fetch_requests_empty", 0) / em, 1)
        out["empty_share_fetch_share"] = round(
            e.get("fetch_requests_empty", 0) / e["fetch_requests"], 3)
        out["engine_share_acknowledges_per_m"] = round(e.get("ack_requests", 0) / em, 1)
    return out


# (dt)'s runtimes, as bench/connect.py records their runs (t_<runtime>, t_<runtime>_all)
TXN_RUNTIMES = ("share", "share_fixed_fetch", "classic", "java_share")

# results.json keys: cost_<scenario>_<runtime>_<figure> for these figures
KEY_FIGURES = ("broker_cpu_s_per_m", "broker_cpu_s_per_m_without_jit", "broker_jit_share",
               "share_fetches_per_m", "share_acknowledges_per_m", "state_writes_per_m",
               "state_topic_records_per_m", "state_topic_bytes_per_m",
               "consumer_fetches_per_m", "follower_fetches_per_m",
               "engine_empty_share_fetches_per_m", "empty_share_fetch_share")


def derive(res: Dict[str, Any]) -> None:
    """Adds res["cost"] ({scenario: {runtime: figures}}) and the cost_* keys from the Connect
    results and the consumer runs."""
    cres = res.get("connect", {}).get("results", {})
    cost: Dict[str, Dict[str, Dict[str, Any]]] = {}

    def all_runs(key: str) -> List[Dict[str, Any]]:
        # the runs the row's median run was picked from, whole, when connect.py kept them
        if cres.get(f"{key}_all"):
            return cres[f"{key}_all"]
        return [cres[key]] if cres.get(key) else []

    for runtime in ("share", "classic"):
        f = figures(pool(all_runs(f"a_{runtime}"), "rows_in_window", "rows_when_requests_read"))
        if f:
            cost.setdefault("a", {})[runtime] = f
    for runtime in ("share", "classic", "java_share", "engine", "share_ack_on_fetch"):
        f = figures(pool(all_runs(f"d_{runtime}")))
        if f:
            cost.setdefault("d", {})[runtime] = f
    # (dt): the runs' records are the committed ones, the only ones written or read
    for runtime in TXN_RUNTIMES:
        f = figures(pool(all_runs(f"t_{runtime}")))
        if f:
            cost.setdefault("t", {})[runtime] = f
    for client, members in (("engine", 1), ("java", 1), ("engine", 4), ("java", 4),
                            ("classic", 1)):
        runs = [r for r in res.get("consumer_runs", [])
                if r.get("client") == client and r.get("members") == members
                and r.get("record_size") == 100]
        f = figures(pool(runs))
        if f:
            cost.setdefault("consumers", {})[f"{client}_{members}m"] = f
    res["cost"] = cost
    for scenario, by_runtime in cost.items():
        for runtime, f in by_runtime.items():
            for k in KEY_FIGURES:
                if k in f:
                    res[f"cost_{scenario}_{runtime}_{k}"] = f[k]
    d = cost.get("d", {})
    sh, js = d.get("share", {}), d.get("java_share", {})
    res["cost_d_broker_cpu_share_vs_java_share"] = _ratio(sh.get("broker_cpu_s_per_m"),
                                                          js.get("broker_cpu_s_per_m"))
    res["cost_d_broker_cpu_share_vs_java_share_without_jit"] = _ratio(
        sh.get("broker_cpu_s_per_m_without_jit"), js.get("broker_cpu_s_per_m_without_jit"))
    res["cost_d_broker_cpu_share_vs_classic"] = _ratio(sh.get("broker_cpu_s_per_m"),
                                                       d.get("classic", {}).get("broker_cpu_s_per_m"))
    res["cost_d_empty_share_fetch_share"] = sh.get("empty_share_fetch_share")
    aof = d.get("share_ack_on_fetch", {})
    res["cost_d_broker_cpu_ack_on_fetch_vs_ack_first"] = _ratio(aof.get("broker_cpu_s_per_m"),
                                                              sh.get("broker_cpu_s_per_m"))
    res["cost_d_broker_cpu_ack_on_fetch_vs_java_share"] = _ratio(aof.get("broker_cpu_s_per_m"),
                                                               js.get("broker_cpu_s_per_m"))
    a_sh = cost.get("a", {}).get("share", {})
    fetches = a_sh.get("share_fetches_per_m")
    res["cost_a_share_fetches_per_row"] = round(fetches / 1e6, 3) if fetches is not None else None
    # issue 43's windows; (dt)'s have their own maximum, for issue 54's goal
    res["cost_broker_jit_share_max"] = _jit_share_max(
        by for scenario, by in cost.items() if scenario != "t")
    _txn_ratios(res, cost)
    c = cost.get("consumers", {})
    for n in (1, 4):
        res[f"cost_consumers_{n}m_broker_cpu_engine_vs_java"] = _ratio(
            c.get(f"engine_{n}m", {}).get("broker_cpu_s_per_m"),
            c.get(f"java_{n}m", {}).get("broker_cpu_s_per_m"))


def _jit_share_max(by_runtimes: Iterable[Dict[str, Dict[str, Any]]]) -> Optional[float]:
    """The highest JIT share among these figures' windows (None when none was measured)."""
    jits = [f["broker_jit_share"] for by in by_runtimes for f in by.values()
            if f.get("broker_jit_share") is not None]
    return max(jits) if jits else None


def _txn_ratios(res: Dict[str, Any], cost: Dict[str, Dict[str, Dict[str, Any]]]) -> None:
    """(dt) against (d) (issue 54: the brokers' CPU per committed record written within 1.2x of
    a plain topic's record, without JIT), against Java's share consumer on the same topic, and
    fetches sized to the records against fixed-size ones."""
    t, d = cost.get("t", {}), cost.get("d", {})
    t_sh, d_sh = t.get("share", {}), d.get("share", {})
    cpu, no_jit = "broker_cpu_s_per_m", "broker_cpu_s_per_m_without_jit"
    res["cost_t_broker_cpu_share_vs_plain_without_jit"] = _ratio(t_sh.get(no_jit), d_sh.get(no_jit))
    res["cost_t_broker_cpu_share_vs_plain"] = _ratio(t_sh.get(cpu), d_sh.get(cpu))
    res["cost_t_broker_cpu_share_vs_java_share_without_jit"] = _ratio(
        t_sh.get(no_jit), t.get("java_share", {}).get(no_jit))
    res["cost_t_broker_cpu_adaptive_vs_fixed_fetch_without_jit"] = _ratio(
        t_sh.get(no_jit), t.get("share_fixed_fetch", {}).get(no_jit))
    res["cost_t_state_topic_records_share_vs_plain"] = _ratio(
        t_sh.get("state_topic_records_per_m"), d_sh.get("state_topic_records_per_m"))
    res["cost_t_broker_jit_share_max"] = _jit_share_max([t])


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return round(a / b, 3) if a is not None and b else None


LABELS = {("a", "share"): "(a) sharesink, 12 tasks", ("a", "classic"): "(a) classic, 3 tasks",
          ("d", "share"): "(d) sharesink, 3 tasks", ("d", "classic"): "(d) classic, 3 tasks",
          ("d", "java_share"): "(d) records, KafkaShareConsumer ×3",
          ("d", "engine"): "(d) records, sharesink's engine alone ×3",
          ("d", "share_ack_on_fetch"): "(d'') sharesink, acknowledgements on the fetch",
          ("t", "share"): "(dt) sharesink, 3 tasks, transactional topic, read_committed",
          ("t", "share_fixed_fetch"): "(dt') sharesink, 3 tasks, transactional topic, read_committed, "
                                       "fixed-size fetches (`share.fetch.bytes.adaptive=false`)",
          ("t", "classic"): "(dt) classic, 3 tasks, transactional topic, read_committed",
          ("t", "java_share"): "(dt) committed records, KafkaShareConsumer ×3, read_committed"}


def table_rows(res: Dict[str, Any]) -> List[List[str]]:
    """RESULTS.md rows: one per scenario and runtime, the figures per million records (rows for
    (a))."""
    rows = []
    for scenario, by_runtime in res.get("cost", {}).items():
        for runtime, f in by_runtime.items():
            label = LABELS.get((scenario, runtime)) or f"consumers: {runtime.replace('_', ' ')}"
            t = f.get("broker_cpu_s_per_m_by_thread", {})
            threads = ", ".join(f"{g} {t[g]:.3g}" for g in ("requests", "share_state",
                                                             "replication", "gc", "jit", "other")
                                if t.get(g))
            empty = f.get("engine_empty_share_fetches_per_m")
            fetches = f.get("share_fetches_per_m")
            rows.append([
                label, f"{f['records']:,} ({f['runs']} run{'s' if f['runs'] > 1 else ''})",
                f"**{f['broker_cpu_s_per_m']:.3g}**"
                + (f" ({f['broker_jit_share']:.0%} JIT)" if "broker_jit_share" in f else ""),
                _g(f.get("broker_cpu_s_per_m_without_jit")), threads,
                ("–" if fetches is None else f"{fetches:,.0f}")
                + ("" if empty is None else f" ({empty:,.0f} empty)"),
                _g(f.get("share_acknowledges_per_m"), ",.0f"),
                _g(f.get("state_writes_per_m"), ",.0f"),
                _g(f.get("state_topic_records_per_m"), ",.0f"),
                _g(f.get("consumer_fetches_per_m"), ",.0f"),
                _g(f.get("follower_fetches_per_m"), ",.0f")])
    return rows


TABLE_HEADER = ["what", "records (runs)", "broker CPU s/M (JIT share)", "without JIT",
                "by thread group, s/M", "ShareFetch/M (empty)", "ShareAcknowledge/M",
                "share-state writes/M", "`__share_group_state` records/M", "consumer Fetch/M",
                "replication Fetch/M"]


def _g(v: Optional[float], fmt: str = ".3g") -> str:
    return "–" if v is None else format(v, fmt)
