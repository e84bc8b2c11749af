#!/usr/bin/env python3
"""sharesink benchmarks, side by side on one broker in one run (see bench/README.md).

    python3 bench/run.py [--quick] [--parts consumers,jni,connect] [--keep-cluster]

Starts the harness cluster (tests/harness/cluster.py; state dir SHARESINK_CLUSTER_DIR, default
build/bench-cluster, ports from SHARESINK_PORT_BASE, default 29500), runs every part, writes
target/bench/results.json, docs/benchmarks/RESULTS.md and docs/benchmarks/results.png, and stops
the cluster. scripts/bench.sh builds the binaries first and then runs this.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# Run as a script, bench/ is sys.path[0]; the harness is in tests/.
sys.path.insert(0, str(ROOT / "tests"))

os.environ.setdefault("SHARESINK_CLUSTER_DIR", str(ROOT / "build" / "bench-cluster"))
os.environ.setdefault("SHARESINK_PORT_BASE", "29500")

from harness.cluster import Cluster, default_plugin_archive  # noqa: E402

import consumers  # noqa: E402
import jmx  # noqa: E402
import proc  # noqa: E402
import report  # noqa: E402

OUT = ROOT / "target" / "bench"
DOCS = ROOT / "docs" / "benchmarks"


class Ctx:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.t0 = time.monotonic()
        self.cluster = Cluster(brokers=args.brokers)
        # SHARESINK_BENCH_ENGINE_BIN: another build of the engine's bench (an A/B of engines)
        self.engine_bin = Path(os.environ.get("SHARESINK_BENCH_ENGINE_BIN") or
                               ROOT / "rust" / "target" / "release" / "sharesink-bench")
        self.krafka_bin = ROOT / "rust" / "target" / "release" / "bench-krafka-members"
        self.franz_bin = ROOT / "rust" / "target" / "release" / "bench-franz-members"
        self.franz_missing = os.environ.get("BENCH_FRANZ_MISSING",
                                            f"{self.franz_bin} is missing (scripts/bench.sh builds it)")
        self.client_timeout = 900 if not args.quick else 300
        self.logs = OUT / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.java = os.environ.get("JAVA", "java")
        self.jni_cp: Optional[str] = os.environ.get("BENCH_JNI_CLASSPATH") or None
        self.jni_missing = os.environ.get("BENCH_JNI_MISSING", "the JNI bench was not built")
        self.plugin_archive = os.environ.get("SHARESINK_PLUGIN_ARCHIVE") or default_plugin_archive()
        self.step = 0
        self.rounds = args.rounds or (1 if args.quick else 3)
        # The JNI pair is short (seconds per run) and swings by tens of percent on a shared
        # machine: five rounds in full mode make its median steadier.
        self.pair_rounds = max(3 if args.quick else 5, self.rounds)
        self.scenarios = set(getattr(args, "scenarios", "a,b,c,d,e,f,g,t").split(","))
        self.jmx = jmx.Jmx(self.cluster, OUT, self.say)

    def say(self, msg: str) -> None:
        el = time.monotonic() - self.t0
        print(f"[{int(el // 60):02d}:{int(el % 60):02d}] {msg}", flush=True)

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    @property
    def tools_log4j2(self) -> Path:
        return self.cluster.tools.log4j2_file()

    def java_cmd(self, main: str, args: List[Any]) -> List[str]:
        return self.cluster.java_cmd(main, [str(a) for a in args], heap="512M",
                                     jvm_opts=consumers.JVM_OPTS[1:])

    def broker_pid(self) -> Optional[int]:
        rec = self.cluster.procs.recorded("broker")
        return int(rec["pid"]) if rec else None

    def broker_pids(self) -> Dict[str, Optional[int]]:
        """Each broker's pid by name ("broker", or "broker-0".."broker-<n-1>")."""
        out = {}
        for i in range(self.cluster.brokers):
            rec = self.cluster.procs.recorded(self.cluster.broker_name(i))
            out[self.cluster.broker_name(i)] = int(rec["pid"]) if rec else None
        return out


def machine() -> Dict[str, Any]:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass

    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip() or \
                subprocess.run(cmd, capture_output=True, text=True, timeout=30).stderr.strip()
        except Exception:  # noqa: BLE001
            return "?"

    java = out(["java", "-version"]).splitlines()
    git = out(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    # What the run measured differs from HEAD only through code: a report a run before it wrote
    # (docs/) or the reports' prose (bench/report/) being uncommitted changes nothing measured.
    status = out(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    dirty = [line for line in status.splitlines()
             if not line[3:].startswith(("docs/", "bench/report/"))]
    return {
        "nproc": os.cpu_count(), "cpu_model": cpu, "memory": mem,
        "kernel": platform.release(), "load_avg_at_start": os.getloadavg(),
        "java": java[0] if java else "?", "rustc": out(["rustc", "--version"]),
        "python": platform.python_version(), "kafka": "4.4.0 (harness broker and tools)",
        "krafka": "0.28.1", "franz_go": _franz_version(),
        "git": git + (" (+ uncommitted changes)" if dirty else ""),
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _franz_version() -> str:
    """franz-go's version as bench/peers/franz/go.mod requires it."""
    try:
        for line in (BENCH / "peers" / "franz" / "go.mod").read_text().splitlines():
            parts = line.split()
            if "github.com/twmb/franz-go" in parts:
                return parts[parts.index("github.com/twmb/franz-go") + 1]
    except (OSError, IndexError):
        pass
    return "?"


# ---------------------------------------------------------------------------------------------
# part 1 + 2


def run_consumers(ctx: Ctx, res: Dict[str, Any], jni_only: bool = False) -> None:
    c = ctx.cluster
    q = ctx.quick
    sizes = [(100, 500_000 if q else 5_000_000), (1024, 50_000 if q else 1_000_000)]
    if jni_only:
        sizes = sizes[:1]
    cons = consumers.Consumers(ctx)
    runs: List[Dict[str, Any]] = res.setdefault("consumer_runs", [])
    jni_runs: List[Dict[str, Any]] = res.setdefault("jni_runs", [])
    for size, n in sizes:
        topic = f"bench_{size}b_{n}"
        ctx.say(f"producing {n:,} records of {size} B to {topic} (6 partitions)")
        c.create_topic(topic, partitions=6)
        c.produce(topic, n, record_size=size, timeout=3600)
        # Warm-up, not recorded: one engine pass over the topic. The first share group to
        # read a freshly produced topic (and the first on a fresh broker, which creates the
        # share-group state topic) runs measurably slower; no measured client should pay it.
        ctx.say("  warm-up: one engine member reads the topic once (not recorded)")
        cons.engine(topic, f"warmup-{size}-{int(time.time())}", n, 1)
        plan = []
        if not jni_only:
            for m in (1, 4):
                plan += [("engine", m), ("java", m), ("krafka", m), ("franz", m)]
            plan.append(("classic", 1))
        for rnd in range(1, ctx.rounds + 1):
            if ctx.rounds > 1 and plan:
                ctx.say(f"  round {rnd} of {ctx.rounds} ({size} B)")
            # Each round starts with a different client: the first run after the warm-up is
            # measurably slower on the broker side, and no client should always pay it.
            k = (rnd - 1) % len(plan) if plan else 0
            for item in plan[k:] + plan[:k]:
                run_one(ctx, cons, item, topic, size, n, rnd, runs, jni_runs)
        if size == 100:
            # the JNI trio, back to back, repeated (short runs: the median of the rounds); which
            # client goes first rotates, as in the rounds above. The middle one is the engine
            # polled from a plain thread that copies every record out: the JNI path without
            # the JVM, so the report can say which part of the gap is the JVM's.
            trio = [("engine", 1, "jni-pair"), ("engine-copy", 1, "jni-pair"), ("jni", 1)]
            for rnd in range(1, ctx.pair_rounds + 1):
                ctx.say(f"  JNI trio {rnd} of {ctx.pair_rounds}")
                k = (rnd - 1) % len(trio)
                for item in trio[k:] + trio[:k]:
                    run_one(ctx, cons, item, topic, size, n, rnd, runs, jni_runs)
        c.delete_topic(topic)


# clients whose cost to the brokers the consumer part counts (bench/cost.py): the brokers' CPU
# by thread group and their requests over the client's whole run (its start and join included)
COUNTED = ("engine", "java", "classic")


def run_one(ctx, cons, item, topic, size, n, rnd, runs, jni_runs) -> None:
    kind, m = item[0], item[1]
    ctx.step += 1
    group = f"{kind}-{size}-{m}m-{ctx.step}-{int(time.time())}"
    ctx.say(f"  {kind:8s} {m} member(s), {size} B: consuming {n:,} records ...")
    counted = kind in COUNTED and len(item) == 2
    if counted:
        requests_before = ctx.jmx.broker_requests()
        window = proc.CpuWindow(ctx.broker_pids())
    try:
        if kind == "engine":
            f = cons.engine(topic, group, n, m)
        elif kind == "engine-copy":
            f = cons.engine(topic, group, n, m, copying_thread=True)
        elif kind == "java":
            f = cons.java_share(topic, group, n, m)
        elif kind == "krafka":
            f = cons.krafka(topic, group, n, m)
        elif kind == "franz":
            f = cons.franz(topic, group, n, m)
        elif kind == "classic":
            f = cons.classic(topic, group, n)
        else:
            f = cons.jni(topic, group, n)
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        f = {"client": kind, "members": m, "error": f"{e.__class__.__name__}: {e}"}
    f["record_size"] = size
    f["round"] = rnd
    if counted:
        f.update({k: v for k, v in window.stop().items() if k.startswith("broker")})
        f["broker_requests"] = jmx.requests_between(requests_before, ctx.jmx.broker_requests())
    if "error" in f:
        ctx.say(f"    FAILED: {f['error'][:400]}")
    else:
        ctx.say(f"    {f['records_per_s']:>10,} records/s  {f['mb_per_s']:>7} MB/s  "
                f"CPU {f['cpu_s_per_m_steady']} s/M steady, {f['cpu_s_per_m_process']} s/M "
                f"process; {f['records_per_s_incl_start']:,} records/s incl. start "
                f"(join {f.get('join_s')} s); broker {f['broker_cpu_s_per_m']} CPU s/M")
    (jni_runs if len(item) > 2 or kind == "jni" else runs).append(f)


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small counts: every key in < 10 min")
    ap.add_argument("--parts", default="consumers,jni,connect")
    ap.add_argument("--rounds", type=int, default=0,
                    help="repeat each consumer run N times, report the median (default: quick 1, "
                         "full 3)")
    ap.add_argument("--keep-cluster", action="store_true", help="leave the cluster running")
    ap.add_argument("--scenarios", default="a,b,c,d,e,f,g,t",
                    help="Connect scenarios to run (a slow sink, b stalled task, c task change, "
                         "d fast sink, e latency at fixed rates, f 12/50/100 tasks on 12 partitions, "
                         "g autoscaling under a burst then a trickle, t the fast sink on a topic "
                         "written in transactions, row (dt)); the others are reported as not run")
    ap.add_argument("--brokers", type=int, default=1,
                    help="KRaft nodes in the benchmark cluster (3: replication factor 3, min ISR 2; "
                         "results under target/bench/brokers-3 and docs/benchmarks/brokers-3)")
    ap.add_argument("--broker-config", default="",
                    help="broker settings of an experiment, k=v,k=v (e.g. "
                         "share.coordinator.append.linger.ms=10); recorded in results.json")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite RESULTS.md and the chart from target/bench/results.json")
    a = ap.parse_args(argv)
    global OUT, DOCS
    if a.brokers != 1:
        # Its own results: the single-broker figures stay the reference of the main report.
        OUT, DOCS = OUT / f"brokers-{a.brokers}", DOCS / f"brokers-{a.brokers}"
        if os.environ["SHARESINK_CLUSTER_DIR"] == str(ROOT / "build" / "bench-cluster"):
            os.environ["SHARESINK_CLUSTER_DIR"] += f"-{a.brokers}"
    OUT.mkdir(parents=True, exist_ok=True)
    DOCS.mkdir(parents=True, exist_ok=True)
    if a.report_only:
        res = json.loads((OUT / "results.json").read_text())
        report.derive(res)
        report.write(res, OUT, DOCS)
        return 0
    if a.broker_config:
        # read by the harness when it writes the brokers' properties
        os.environ["SHARESINK_BROKER_PROPERTIES"] = a.broker_config
    ctx = Ctx(a)
    parts = set(a.parts.split(","))
    res: Dict[str, Any] = {"mode": "quick" if a.quick else "full", "machine": machine(),
                           "parts": sorted(parts), "brokers": a.brokers,
                           "broker_config": os.environ.get("SHARESINK_BROKER_PROPERTIES", "")}
    ctx.say(f"sharesink benchmarks ({res['mode']}); machine: {res['machine']['nproc']} cores "
            f"{res['machine']['cpu_model']}, {res['machine']['memory']}, load "
            f"{', '.join(f'{x:.1f}' for x in res['machine']['load_avg_at_start'])}")
    ctx.say(f"cluster in {ctx.cluster.state_dir} (port base {ctx.cluster.port_base}); "
            f"logs of every client in {ctx.logs}")
    need_worker = "connect" in parts
    rc = 0
    try:
        ctx.cluster.up(workers=0, postgres=False)
        ctx.say(f"broker up at {ctx.cluster.bootstrap}")
        if "consumers" in parts or "jni" in parts:
            run_consumers(ctx, res, jni_only="consumers" not in parts)
        if need_worker:
            import connect  # noqa: E402 - only when the part runs
            connect.run(ctx, res)
    except KeyboardInterrupt:
        ctx.say("interrupted; writing what was measured")
        rc = 130
    except Exception:  # noqa: BLE001 - report what was measured so far
        ctx.say("the run failed:\n" + traceback.format_exc())
        res["failure"] = traceback.format_exc()[-3000:]
        rc = 1
    finally:
        res["machine"]["load_avg_at_end"] = os.getloadavg()
        res["elapsed_s"] = round(time.monotonic() - ctx.t0)
        if not a.keep_cluster:
            try:
                ctx.cluster.down()
                ctx.say("cluster stopped")
            except Exception as e:  # noqa: BLE001
                ctx.say(f"stopping the cluster: {e}")
        report.derive(res)
        (OUT / "results.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        report.write(res, OUT, DOCS)
        ctx.say(f"wrote {OUT / 'results.json'}, {DOCS / 'RESULTS.md'}, {DOCS / 'results.png'} "
                f"in {res['elapsed_s']} s")
        for k in report.KEYS:
            ctx.say(f"  {k}: {res.get(k)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
