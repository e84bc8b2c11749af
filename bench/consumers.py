"""Part 1 and 2: share consumers side by side on one topic, one client at a time.

Clients (same fetch size and records per fetch for all: fetch.max.bytes = FETCH_BYTES,
max.poll.records = MAX_POLL; every share group gets share.auto.offset.reset=earliest first):
- engine:  rust/target/release/sharesink-bench (explicit ACCEPT per batch)
- java:    org.apache.kafka.tools.ShareConsumerPerformance (KafkaShareConsumer, implicit acks)
- krafka:  bench/peers/krafka (krafka 0.28.1 ShareConsumer, explicit ACCEPT per record)
- franz:   bench/peers/franz (franz-go 1.22.3 kgo share consumer, explicit ACCEPT per record)
- classic: org.apache.kafka.tools.ConsumerPerformance (the ceiling, one consumer)
- jni:     io.sharesink.engine.NativeEngineBench (Java polling through JNI, copying each key and
           value into byte[], ACCEPT per batch)

Every client reports two clocks: from the first record to the last ("steady", the headline) and
from process start to the end ("incl. start", JVM start-up and group join included).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any, Dict, List, Optional

import proc

FETCH_BYTES = 1_048_576
JAVA_SHARE_TIMEOUT_MS = 600_000
MAX_POLL = 500

MEMBER_FETCHES = re.compile(r"member \d+: fetches (\d+) \(avg ([\d.]+) ms\)")
# the rest of the engine bench's member line: its ShareAcknowledges and empty ShareFetches
MEMBER_COUNTS = re.compile(r"member \d+: fetches (\d+) .*ShareAcknowledge (\d+) .*"
                           r"empty fetches (\d+)")
RUST_LINE = re.compile(
    r"consumed (\d+) records \(([\d.]+) MB\).* in ([\d.]+) s \(\+([\d.]+) s join\): (\d+) records/s, "
    r"([\d.]+) MB/s, CPU ([\d.]+) s")
JNI_LINE = re.compile(
    r"JNI: consumed (\d+) records \(([\d.]+) MB\) in ([\d.]+) s \(\+([\d.]+) s join\): (\d+) records/s, "
    r"([\d.]+) MB/s, CPU ([\d.]+) s")

# Every JVM client (Java share consumer, classic consumer, JNI bench) gets the same flags. The
# heap is touched at start-up (-Xms + AlwaysPreTouch), outside the measured window: otherwise
# the kernel zero-fills fresh heap pages during it (~80 ns per record over the first 0.5 GB a
# fresh JVM allocates), a cost a long-running worker does not pay.
JVM_OPTS = ["-Xmx512M", "-Xms512M", "-XX:+AlwaysPreTouch", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent"]


def extra_settings() -> List[str]:
    """`--set k=v` for every entry of SHARESINK_BENCH_ENGINE_SETTINGS ("k=v,k=v"): engine
    settings for an experiment, given to the engine bench and the JNI bench alike."""
    out: List[str] = []
    for kv in filter(None, os.environ.get("SHARESINK_BENCH_ENGINE_SETTINGS", "").split(",")):
        out += ["--set", kv.strip()]
    return out


def _jvm_time(s: str) -> float:
    return dt.datetime.strptime(s.strip(), "%Y-%m-%d %H:%M:%S:%f").timestamp()


def _figures(kind: str, members: int, records: int, mb: float, steady_s: float, total_s: float,
             cpu_steady: Optional[float], r: proc.Result, extra: Optional[Dict] = None) -> Dict[str, Any]:
    m = records / 1e6 if records else float("nan")
    f = {
        "client": kind, "members": members, "records": records, "mb": round(mb, 2),
        "seconds_steady": round(steady_s, 3), "seconds_incl_start": round(total_s, 3),
        "records_per_s": round(records / steady_s) if steady_s > 0 else None,
        "records_per_s_incl_start": round(records / total_s) if total_s > 0 else None,
        "mb_per_s": round(mb / steady_s, 2) if steady_s > 0 else None,
        "cpu_s_per_m_steady": round(cpu_steady / m, 3) if cpu_steady is not None and records else None,
        "cpu_s_per_m_process": round(r.cpu_total / m, 3) if r.cpu_total is not None and records else None,
        "cpu_s_process": round(r.cpu_total, 2) if r.cpu_total is not None else None,
        "broker_cpu_s_per_m": round(r.broker_cpu / m, 3) if r.broker_cpu is not None and records else None,
        "exit": r.returncode,
    }
    f.update(extra or {})
    return f


class Consumers:
    def __init__(self, ctx):
        self.ctx = ctx   # bench context: cluster, paths, say(), kafka classpath, binaries

    # ---- clients

    def engine(self, topic: str, group: str, n: int, members: int,
               copying_thread: bool = False, on_line=None,
               group_config: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """The engine bench; `copying_thread`: each member polls from a plain thread and copies
        every key and value out, as the JNI path does, but without a JVM (client "engine-copy")."""
        c = self.ctx
        kind = "engine-copy" if copying_thread else "engine"
        cmd = [str(c.engine_bin), "--bootstrap", c.cluster.bootstrap, "--topic", topic,
               "--records", str(n), "--group", group, "--members", str(members),
               "--set", f"max.poll.records={MAX_POLL}", "--set", f"fetch.max.bytes={FETCH_BYTES}",
               *extra_settings()]
        if copying_thread:
            cmd += ["--poll-from-thread", "--copy-records"]
        for k, v in (group_config or {}).items():
            cmd += ["--group-config", f"{k}={v}"]
        r = proc.run(cmd, c.log(f"{kind}-{topic}-{members}m"), timeout=c.client_timeout,
                     broker_pid=c.broker_pid(), on_line=on_line)
        return self._rust_result(kind, members, r)

    def krafka(self, topic: str, group: str, n: int, members: int) -> Dict[str, Any]:
        return self._peer("krafka", self.ctx.krafka_bin, topic, group, n, members)

    def franz(self, topic: str, group: str, n: int, members: int) -> Dict[str, Any]:
        c = self.ctx
        if not c.franz_bin.exists():
            return {"client": "franz", "members": members, "error": c.franz_missing}
        return self._peer("franz", c.franz_bin, topic, group, n, members)

    def _peer(self, kind: str, binary, topic: str, group: str, n: int,
              members: int) -> Dict[str, Any]:
        """The bench peers (bench/peers/*): one CLI and the engine bench's output line."""
        c = self.ctx
        c.cluster.set_group_config(group, {"share.auto.offset.reset": "earliest"})
        cmd = [str(binary), "--bootstrap", c.cluster.bootstrap, "--topic", topic,
               "--group", group, "--records", str(n), "--members", str(members),
               "--max-poll-records", str(MAX_POLL), "--fetch-max-bytes", str(FETCH_BYTES)]
        r = proc.run(cmd, c.log(f"{kind}-{topic}-{members}m"), timeout=c.client_timeout,
                     broker_pid=c.broker_pid())
        return self._rust_result(kind, members, r)

    def _rust_result(self, kind: str, members: int, r: proc.Result) -> Dict[str, Any]:
        m = RUST_LINE.search(r.text)
        if not m:
            return {"client": kind, "members": members, "error": _tail(r)}
        n, mb, secs, join, _, _, cpu = m.groups()
        n, secs, join = int(n), float(secs), float(join)
        extra: Dict[str, Any] = {"join_s": join}
        # the engine bench's per-member totals: ShareFetch requests and their mean round trip
        fetches = [(int(f), float(ms)) for f, ms in MEMBER_FETCHES.findall(r.text)]
        if fetches:
            extra["fetches"] = sum(f for f, _ in fetches)
            extra["fetch_avg_ms"] = round(sum(f * ms for f, ms in fetches)
                                          / max(1, extra["fetches"]), 2)
        counts = [tuple(map(int, c)) for c in MEMBER_COUNTS.findall(r.text)]
        if counts:
            # as the Connect rows read them from the tasks' engines
            extra["engine"] = {"fetch_requests": sum(c[0] for c in counts),
                               "ack_requests": sum(c[1] for c in counts),
                               "fetch_requests_empty": sum(c[2] for c in counts)}
        return _figures(kind, members, n, float(mb), secs, r.wall, float(cpu), r, extra)

    def java_share(self, topic: str, group: str, n: int, members: int, on_line=None,
                   group_config: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        c = self.ctx
        c.cluster.set_group_config(group, {"share.auto.offset.reset": "earliest",
                                           **(group_config or {})})
        # ShareConsumerPerformance gives its threads --timeout in all before it interrupts them
        # (awaitTermination), not only between records: 30 s cut (dt)'s 1.8 M committed records
        # short at ~45,000/s. A wait of its own ends a stuck run (proc.run's client_timeout).
        args = ["--bootstrap-server", c.cluster.bootstrap, "--topic", topic, "--group", group,
                "--num-records", n, "--threads", members, "--timeout", JAVA_SHARE_TIMEOUT_MS,
                "--fetch-size", FETCH_BYTES, "--command-property", f"max.poll.records={MAX_POLL}",
                "--show-detailed-stats", "--reporting-interval", 100]
        cmd = c.java_cmd("org.apache.kafka.tools.ShareConsumerPerformance", args)
        r = proc.run(cmd, c.log(f"java-{topic}-{members}m"), timeout=c.client_timeout,
                     broker_pid=c.broker_pid(), on_line=on_line)
        first_jvm = first_mono = None
        summary = None
        summary_mono = None
        for mono, line in r.lines:
            cols = [x.strip() for x in line.split(",")]
            if len(cols) < 7 or not re.match(r"\d{4}-", cols[0]):
                continue
            if "for share consumer" in line:
                cnt = int(cols[5])
                if cnt > 0 and first_jvm is None:
                    first_jvm, first_mono = _jvm_time(cols[1]), mono
            else:
                summary, summary_mono = cols, mono
        if not summary:
            return {"client": "java", "members": members, "error": _tail(r)}
        start, end = _jvm_time(summary[0]), _jvm_time(summary[1])
        total = int(summary[5])
        mb = float(summary[2])
        steady = end - first_jvm if first_jvm else end - start
        cpu_steady = None
        if first_mono is not None:
            a, b = r.sampler.at(first_mono), r.sampler.at(summary_mono)
            if a is not None and b is not None:
                cpu_steady = b - a
        return _figures("java", members, total, mb, steady, r.wall, cpu_steady, r,
                        {"join_s": round(first_jvm - start, 3) if first_jvm else None,
                         "tool_clock_s": round(end - start, 3),
                         "tool_records_per_s": round(total / (end - start)) if end > start else None})

    def classic(self, topic: str, group: str, n: int) -> Dict[str, Any]:
        c = self.ctx
        args = ["--bootstrap-server", c.cluster.bootstrap, "--topic", topic, "--group", group,
                "--num-records", n, "--timeout", 30000, "--fetch-size", FETCH_BYTES,
                "--command-property", f"max.poll.records={MAX_POLL}",
                "--command-property", f"fetch.max.bytes={FETCH_BYTES}"]
        cmd = c.java_cmd("org.apache.kafka.tools.ConsumerPerformance", args)
        r = proc.run(cmd, c.log(f"classic-{topic}"), timeout=c.client_timeout,
                     broker_pid=c.broker_pid())
        header = None
        for mono, line in r.lines:
            cols = [x.strip() for x in line.split(",")]
            if "fetch.time.ms" in cols:
                header = cols
            elif header and len(cols) == len(header) and re.match(r"\d{4}-", cols[0]):
                d = dict(zip(header, cols))
                total = int(d["data.consumed.in.nMsg"])
                fetch_s = float(d["fetch.time.ms"]) / 1000
                a, b = r.sampler.at(mono - fetch_s), r.sampler.at(mono)
                cpu_steady = (b - a) if a is not None and b is not None else None
                return _figures("classic", 1, total, float(d["data.consumed.in.MB"]), fetch_s,
                                r.wall, cpu_steady, r,
                                {"join_s": float(d["rebalance.time.ms"]) / 1000})
        return {"client": "classic", "members": 1, "error": _tail(r)}

    def jni(self, topic: str, group: str, n: int) -> Dict[str, Any]:
        c = self.ctx
        if c.jni_cp is None:
            return {"client": "jni", "members": 1, "error": c.jni_missing}
        args = ["--bootstrap", c.cluster.bootstrap, "--topic", topic, "--records", n,
                "--group", group, "--set", f"max.poll.records={MAX_POLL}",
                "--set", f"fetch.max.bytes={FETCH_BYTES}", *extra_settings()]
        cmd = [c.java, *JVM_OPTS, f"-Dlog4j2.configurationFile={c.tools_log4j2}", "-cp", c.jni_cp,
               "io.sharesink.engine.NativeEngineBench", *map(str, args)]
        r = proc.run(cmd, c.log(f"jni-{topic}"), timeout=c.client_timeout,
                     broker_pid=c.broker_pid())
        m = JNI_LINE.search(r.text)
        if not m:
            return {"client": "jni", "members": 1, "error": _tail(r)}
        cnt, mb, secs, join, _, _, cpu = m.groups()
        extra: Dict[str, Any] = {"join_s": float(join)}
        split = jni_cpu_by_thread(r.text, int(cnt))
        if split:
            extra["cpu_s_per_m_by_thread"] = split
        return _figures("jni", 1, int(cnt), float(mb), float(secs), r.wall, float(cpu), r, extra)


JNI_THREADS_LINE = re.compile(r"JNI CPU by thread \(from the first record\): (.*)")


def jni_cpu_by_thread(text: str, records: int) -> Dict[str, float]:
    """NativeEngineBench's CPU-by-thread line as CPU s per million records by thread group: the
    polling thread (`java`), the native runtime (`sharesink-engine-N`), GC, JIT, the rest."""
    m = JNI_THREADS_LINE.search(text)
    if not m or records <= 0:
        return {}
    groups = {"polling": 0.0, "engine": 0.0, "gc": 0.0, "jit": 0.0, "other": 0.0}
    for part in m.group(1).split(", "):
        name, _, secs = part.strip().removesuffix(" s").rpartition(" ")
        try:
            value = float(secs)
        except ValueError:
            continue
        if name == "java":
            key = "polling"
        elif name.startswith("sharesink-engin"):
            key = "engine"
        elif name.startswith(("GC Thread", "G1 ")):
            key = "gc"
        elif "CompilerThre" in name:
            key = "jit"
        else:
            key = "other"
        groups[key] += value
    return {k: round(v / (records / 1e6), 3) for k, v in groups.items()}


def _tail(r: proc.Result, n: int = 12) -> str:
    return f"exit {r.returncode}: " + " | ".join(l for _, l in r.lines[-n:])


def progress_event(client: str, line: str) -> Optional[str]:
    """What a line of a share consumer bench says of its progress: "first" (records are
    arriving), "last" (it has consumed them all) or None; for a driver that measures other
    processes over the client's window. The engine bench says so itself; Java's
    ShareConsumerPerformance prints a per-consumer report once records arrive
    (--show-detailed-stats) and its summary at the end."""
    if client == "engine":
        return {"first record": "first", "last record": "last"}.get(line.strip())
    cols = [x.strip() for x in line.split(",")]
    if len(cols) < 7 or not re.match(r"\d{4}-", cols[0]):
        return None
    if "for share consumer" not in line:
        return "last"
    try:
        return "first" if int(cols[5]) > 0 else None
    except ValueError:
        return None
