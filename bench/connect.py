"""Part 3: Connect end to end, sharesink vs the classic sink runtime, same legacy sink, same data.

One Connect worker (distributed mode) with the sharesink plugin, the Debezium JDBC sink and
Kafka's FileStream sink in their own plugin directories; PostgreSQL from the harness. Each run
is a fresh connector (fresh consumer group / share group) reading the same topic from the start.

Slow sink (a, b, c): Debezium's JDBC sink (io.debezium.connector.jdbc.JdbcSinkConnector,
unmodified) into PostgreSQL, one record per put (max.poll.records=1 for both runtimes), and a
PostgreSQL BEFORE INSERT trigger that runs pg_sleep(0.02) for every row: each put takes ~20 ms
plus the sink's own work. The table has a column `written_at timestamptz DEFAULT
clock_timestamp()`, so every row carries the time its INSERT ran: rates and gaps come from
these timestamps, not from polling.
(b) stall: the trigger also makes exactly one INSERT sleep STALL seconds once the bench arms it
(a flag row plus a sequence: the first INSERT after arming gets 1 and sleeps; no lock is held
that others would wait on); the task running that put is stalled, the others are not.
(c) tasks.max is changed through the REST API (PUT config) during the run.
Fast sink (d): Kafka's FileStream sink writing fixed-width values to a file; rate from the file
size sampled every 50 ms.
(dt) the same on bench_txn, a topic bench/peers/txn-producer writes in transactions (some
aborted), every runtime reading committed records only; the lines of aborted records are counted.
Latency (e): bench/peers/rate-producer sends records at a fixed rate, each value carrying the
wall time it was sent; the FileStream file is tailed every 5 ms (one line in LAT_SAMPLE read at
fixed offsets: lines are fixed-width) and the JDBC rows carry produced_us beside written_at, so
produce -> written latency comes per record, for both runtimes, same sink, same topic layout.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import connect_figures
import jmx

from connect_params import (  # noqa: F401 - also read as connect.X by the report and tests
    SHARE_SINK,
    JDBC_SINK,
    FILE_SINK,
    STRING_CONVERTER,
    JSON_CONVERTER,
    ROW_SLEEP,
    STEADY_FROM,
    KAFKA_DEFAULT_WINDOW,
    ACK_ON_FETCH,
    READ_COMMITTED_CLASSIC,
    READ_COMMITTED_SHARE,
    READ_COMMITTED_GROUP,
    FIXED_FETCH_BYTES,
    TXN_PER_TRANSACTION,
    TXN_ABORT_EVERY,
    TXN_PARTITIONS,
    TXN_PRODUCER,
    LAT_FAST_FRACTIONS,
    LAT_SLOW_FRACTIONS,
    SUSTAINED_RECORDS_S,
    SCALE_RECORDS_PER_PUT,
    AUTOSCALE_MIN,
    AUTOSCALE_MAX,
    AUTOSCALE_TRICKLE,
    AUTOSCALE_BURST_RATE,
    AUTOSCALE_GOAL_DRAIN,
    AUTOSCALE_GOAL_TASK_S,
    LAT_SAMPLE,
    LAT_LINE,
    RATE_PRODUCER,
)
# the requests counted on each broker over a run (bench/jmx.py); kept here for the report
BROKER_REQUESTS = jmx.BROKER_REQUESTS

SCHEMA = json.dumps({"type": "struct", "optional": False, "name": "bench.Row", "fields": [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "payload", "type": "string", "optional": True}]}, separators=(",", ":"))


def _value(i: int) -> str:
    return '{"schema":' + SCHEMA + ',"payload":{"id":' + str(i) + ',"payload":"row-' + \
        f"{i:08d}" + '"}}'


class Connect:
    def __init__(self, ctx):
        self.ctx = ctx
        self.c = ctx.cluster
        self.rest = None
        self.pg: Dict[str, Any] = {}
        self.jmx_reader = jmx.Jmx(ctx.cluster, ctx.logs.parent, ctx.say)
        q = ctx.quick
        # durations (s) and sizes
        self.run_a = 12 if q else 60            # (a) measured run length after the first row
        self.warm_b = 6 if q else 20           # (b) steady time before the stall is armed
        self.stall = 8 if q else 20            # (b) stall length (< the 30 s record lock)
        self.stall_repeats = 1 if q else 3     # (b) sharesink stalls, the median loss reported
        self.warm_c = 5 if q else 20            # (c) time before tasks.max changes
        self.after_c = 8 if q else 30          # (c) time after the change
        self.n_slow = 20_000 if q else 60_000   # backlog: more than any run consumes
        self.n_fast = 200_000 if q else 2_000_000
        self.fast_max = 25 if q else 90          # (d) measure at most this long after the first line
        self.warm_share = 2 if q else 4          # (d) unrecorded sharesink runs before it,
        self.warm_share_max = 4 if q else 8      # more while the brokers' JIT is busy
        # (d) classic and sharesink runs, alternating; the run with the median rate of each is
        # reported. One pair moves the ratio by more than the goal's margin on 2 shared cores
        # (sharesink 0.92-1.10 M records/s and classic 0.97-1.24 M in one series of warm runs).
        self.fast_pairs = 1 if q else 3
        # (dt) records written to bench_txn, aborted too; at 1 M (6 s runs once sized) the brokers'
        # JIT was 20-26% of the windows
        self.n_txn = 100_000 if q else 2_000_000
        self.n_txn_committed: Optional[int] = None  # what TxnProducer reports it committed
        self.txn_produced: Dict[str, int] = {}
        self.txn_error = "bench_txn not produced (set-up did not run)"
        self.share_tasks = 12
        self.counter = 0
        self.lat_fast_s = 5 if q else 20        # (e) produce time per fast-sink rate
        self.lat_fast_repeats = 1 if q else 3   # (e) fast-sink runs per rate and runtime
        self.lat_slow_s = 8 if q else 30       # (e) produce time per slow-sink rate
        self.lat_skip_s = 1.0                   # (e) records of the first second are not timed
        # (e) the producer's warm-up on a topic of its own (tasks join meanwhile). Its JVM's C2
        # compiler used 0.6-0.8 cores for its first ~16 s (12,000 records/s, measured alone):
        # after 3 s of warm-up the first 5 timed seconds cost it 1.07-1.21 cores, against
        # 0.36-0.58 later; after 10 s and no flush at the switch, 0.67 at 12,000/s.
        self.lat_warmup_s = 3 if q else 10
        self.lat_drain_s = 10                   # (e) at most this long after the last send
        self.producer_cp: Optional[str] = None
        self.scale_tasks = (12, 50, 100)        # (f) sharesink tasks on the 12-partition topic
        self.run_f = 12 if q else 40            # (f) measured run length after the first row
        self.n_scale = 150_000 if q else 300_000
        self.g_quiet = 15                       # (g) trickle alone before the burst
        self.g_burst = 30_000 if q else 60_000  # (g) records in the burst
        self.g_after = 240 if q else 480        # (g) trickle after the burst starts
        self.g_min_cap = 60 if q else 120       # (g) fixed minimum: measured this long, then
        #                                         its drain is extrapolated from its rate

    # ---- set-up

    def setup(self) -> None:
        ctx = self.ctx
        ctx.say("connect: starting PostgreSQL and a Connect worker (sharesink plugin "
                f"{ctx.plugin_archive})")
        self.pg = self.c.start_postgres()
        self.c.start_worker(0, plugin_archive=ctx.plugin_archive)
        self.rest = self.c.rest(0)
        self.pg_version = self.sql("SHOW server_version").strip()
        ctx.say(f"connect: worker {self.c.worker_url(0)}, PostgreSQL {self.pg_version}")
        chunk = 50_000
        if set("abce") & ctx.scenarios:
            ctx.say(f"connect: producing {self.n_slow:,} JSON records to bench_slow "
                    "(3 partitions)")
            self.c.create_topic("bench_slow", partitions=3)
        for s in range(0, self.n_slow if set("abce") & ctx.scenarios else 0, chunk):
            ids = range(s, min(self.n_slow, s + chunk))
            self.c.produce("bench_slow", [_value(i) for i in ids], keys=[str(i) for i in ids],
                           timeout=1800)
        if "f" in ctx.scenarios:
            ctx.say(f"connect: producing {self.n_scale:,} JSON records to bench_scale "
                    "(12 partitions)")
            self.c.create_topic("bench_scale", partitions=12)
            for s in range(0, self.n_scale, chunk):
                ids = range(s, min(self.n_scale, s + chunk))
                self.c.produce("bench_scale", [_value(i) for i in ids],
                               keys=[str(i) for i in ids], timeout=1800)
        self.fast_width = 10
        chunk = 500_000
        if set("de") & ctx.scenarios:
            ctx.say(f"connect: producing {self.n_fast:,} fixed-width records to bench_fast "
                    "(3 partitions)")
            self.c.create_topic("bench_fast", partitions=3)
        for s in range(0, self.n_fast if set("de") & ctx.scenarios else 0, chunk):
            self.c.produce("bench_fast", [f"v{i:09d}" for i in range(s, min(self.n_fast, s + chunk))],
                           timeout=1800)
        if "t" in ctx.scenarios:
            try:
                self.produce_txn()
            except (OSError, RuntimeError, subprocess.SubprocessError) as e:
                # only (dt) needs the topic: its runs fail with this, the other scenarios run
                self.txn_error = f"bench_txn not produced: {e.__class__.__name__}: {str(e)[:400]}"
                ctx.say("connect: " + self.txn_error)

    def produce_txn(self) -> None:
        """(dt): bench_txn written by TxnProducer in transactions, one in TXN_ABORT_EVERY of them
        aborted; what it committed is what every (dt) run must write, no more."""
        ctx = self.ctx
        ctx.say(f"connect: producing {self.n_txn:,} fixed-width records to bench_txn "
                f"({TXN_PARTITIONS} partitions) in transactions of {TXN_PER_TRANSACTION}, one in "
                f"{TXN_ABORT_EVERY} aborted")
        self.c.create_topic("bench_txn", partitions=TXN_PARTITIONS)
        cmd = self.c.java_cmd("TxnProducer", [self.c.bootstrap, "bench_txn", TXN_PARTITIONS,
                                              self.n_txn, TXN_PER_TRANSACTION, TXN_ABORT_EVERY],
                              heap="512m")
        i = cmd.index("-cp")
        cmd[i + 1] = self.compile_peer(TXN_PRODUCER, "txn-producer")
        with open(ctx.log("txn-producer"), "w") as log:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True, timeout=1800)
        self.txn_produced = txn_summary(p.stdout)
        if p.returncode != 0 or not self.txn_produced:
            raise RuntimeError(f"TxnProducer exited {p.returncode} without its summary (log: "
                               f"{ctx.log('txn-producer')})")
        self.n_txn_committed = self.txn_produced["committed"]
        ctx.say(f"connect: bench_txn: {self.txn_produced}")

    def compile_peer(self, source: Path, name: str) -> str:
        """A Java peer compiled against the harness's Kafka jars into the bench's output
        directory (`name` under it); the classpath to run it with."""
        out = self.ctx.logs.parent / name
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", self.c.classpath,
                        str(source)], check=True, capture_output=True, text=True)
        return f"{out}:{self.c.classpath}"

    def build_producer(self) -> str:
        """Compile RateProducer against the harness's Kafka jars (once per run)."""
        if self.producer_cp is None:
            self.producer_cp = self.compile_peer(RATE_PRODUCER, "rate-producer")
        return self.producer_cp

    def jmx(self, pid: int, pattern: str, attribute: str) -> Dict[str, float]:
        """{MBean name: value} of `attribute` for the MBeans matching `pattern` in the worker,
        through the attach API (bench/peers/jmx-read); {} when unavailable."""
        return self.jmx_reader.read(pid, pattern, [attribute]).get(attribute, {})

    def engine_off_heap_mib(self, pid: int, connector: str) -> Optional[float]:
        """sharesink's `share-engine-off-heap-bytes`: the same in every task (one native library
        per worker)."""
        values = self.jmx(pid, f"kafka.connect:type=plugins,connector={connector},*",
                          "share-engine-off-heap-bytes")
        return round(max(values.values()) / 2 ** 20, 1) if values else None

    ENGINE_COUNTERS = ("share-engine-fetch-requests-total", "share-engine-fetch-requests-empty-total",
                       "share-engine-records-fetched-total", "share-engine-ack-requests-total",
                       "share-engine-ack-errors-total", "share-engine-session-resets-total",
                       "share-engine-rejoins-total")
    ENGINE_AVERAGES = ("share-engine-fetch-latency-avg-ms", "share-engine-ack-latency-avg-ms")

    def engine_counters(self, connector: str) -> Dict[str, Any]:
        """sharesink's engine counters (from the task's start), summed over the connector's
        tasks, and the engines' average round trips (each task's in `per_task`); {} when JMX is
        unavailable. One attach reads them all."""
        pid = int(self.c.procs.recorded("worker-0")["pid"])
        pattern = f"kafka.connect:type=plugins,connector={connector},*"
        read = self.jmx_reader.read(pid, pattern, self.ENGINE_COUNTERS + self.ENGINE_AVERAGES)
        return engine_counters(read, self.ENGINE_COUNTERS)

    def broker_requests(self) -> Dict[str, Dict[str, int]]:
        """{broker: {request: count since its start}} for the requests a sink's reading makes
        a broker handle (bench/jmx.py); read before and after a run, the difference is the
        run's."""
        return self.jmx_reader.broker_requests()

    @staticmethod
    def requests_between(before: Dict[str, Dict[str, int]],
                         after: Dict[str, Dict[str, int]]) -> Dict[str, Dict[str, int]]:
        return jmx.requests_between(before, after)

    def runtime_client_connections(self, pid: int, connector: str) -> Dict[str, float]:
        """Connections of the Kafka clients Connect's runtime builds for the connector's tasks
        (a source-task host gets a producer, and an admin client when it creates topics)."""
        out = {}
        for kind, pattern in (("producer", "kafka.producer:type=producer-metrics,*"),
                              ("admin", "kafka.admin.client:type=admin-client-metrics,*"),
                              ("consumer", "kafka.consumer:type=consumer-metrics,*")):
            values = self.jmx(pid, pattern, "connection-count")
            out[kind] = sum(v for n, v in values.items() if connector in n)
        return out

    def start_producer(self, topic: str, rate: float, seconds: float, fmt: str, log: Path,
                       warmup_s: float = 0):
        """RateProducer; with warmup_s, it first sends as long at the same rate to a topic of
        its own (no connector reads it) and this returns once it has switched to `topic`: the
        tasks join their group meanwhile, and what is timed comes from a warm producer rather
        than a JVM still compiling on the cores the broker and the worker share."""
        args = [self.c.bootstrap, topic, f"{rate:.1f}", str(seconds), fmt]
        if warmup_s:
            warm_topic = f"{topic}_warmup"
            self.c.create_topic(warm_topic, partitions=3)
            args += [warm_topic, str(warmup_s)]
        cmd = self.c.java_cmd("RateProducer", args, heap="512m")
        i = cmd.index("-cp")
        cmd[i + 1] = self.build_producer()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        if warmup_s:
            while True:
                line = p.stdout.readline()
                if not line or line.strip() == "warm":
                    break  # a producer that died is found out by producer_result
        return p

    @staticmethod
    def producer_result(p: subprocess.Popen, timeout: float) -> Dict[str, Any]:
        out, _ = p.communicate(timeout=timeout)
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"RateProducer exited {p.returncode} without its summary")

    def cluster_pids(self) -> Dict[str, Optional[int]]:
        """The worker's and each broker's pids (None when not running): "broker" on one broker,
        "broker-0".."broker-<n-1>" on several (proc sums them as "broker")."""
        names = ["worker-0"] + [self.c.broker_name(i) for i in range(self.c.brokers)]
        rec = {n: self.c.procs.recorded(n) for n in names}
        return {"worker" if n == "worker-0" else n: (int(r["pid"]) if r else None)
                for n, r in rec.items()}

    def load_timeline(self, producer_pid: int):
        import proc
        return proc.LoadTimeline({**self.cluster_pids(), "producer": producer_pid,
                                  "bench": os.getpid()})

    def place_on_own_cores(self, own: bool) -> None:
        """With `own`, every thread of the brokers on core 0 and of the worker on core 1 (new
        threads inherit their creator's cores); without, every process on every core again.
        Models a worker that does not share its CPU with the brokers, as on a real cluster."""
        every = f"0-{(os.cpu_count() or 1) - 1}"
        for name, pid in self.cluster_pids().items():
            if pid is None:
                continue
            cores = every if not own else ("1" if name == "worker" else "0")
            subprocess.run(["taskset", "-a", "-cp", cores, str(pid)], check=True,
                           capture_output=True)

    def cpu_window(self, label: str = "window"):
        """The cluster's CPU from now; `label` names the window in opt-in broker recordings
        (proc.BrokerRecordings)."""
        import proc
        return proc.CpuWindow(self.cluster_pids(), label)

    # ---- PostgreSQL

    def sql(self, s: str) -> str:
        return self.c.psql(s, db=self.pg["db"])

    def make_table(self, name: str) -> None:
        self.sql(f"""
DROP TABLE IF EXISTS {name};
CREATE TABLE {name} (id bigint NOT NULL, payload text,
                     written_at timestamptz NOT NULL DEFAULT clock_timestamp());
ALTER TABLE {name} OWNER TO {self.pg['user']};
CREATE TABLE {name}_ctl (armed boolean NOT NULL);
INSERT INTO {name}_ctl VALUES (false);
CREATE SEQUENCE {name}_stall_seq;
GRANT ALL ON {name}_ctl, {name}_stall_seq TO {self.pg['user']};
CREATE FUNCTION {name}_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT armed FROM {name}_ctl) AND nextval('{name}_stall_seq') = 1 THEN
    PERFORM pg_sleep(TG_ARGV[1]::float8);
  END IF;
  PERFORM pg_sleep(TG_ARGV[0]::float8);
  RETURN NEW;
END $$;
""")

    def set_trigger(self, name: str, row_sleep: float, stall: float) -> None:
        self.sql(f"CREATE TRIGGER {name}_slow BEFORE INSERT ON {name} FOR EACH ROW "
                 f"EXECUTE FUNCTION {name}_slow('{row_sleep}', '{stall}');")

    def arm_stall(self, name: str) -> float:
        self.sql(f"SELECT setval('{name}_stall_seq', 1, false); UPDATE {name}_ctl SET armed = true;")
        return time.time()

    def times(self, name: str) -> List[float]:
        out = self.sql(f"SELECT extract(epoch FROM written_at) FROM {name} ORDER BY written_at")
        return [float(x) for x in out.split()]

    @staticmethod
    def second_half(ts: List[float], t0: float, run: float) -> Tuple[float, float, int]:
        """The second half of a run of `run` s from t0, and the rows written in it."""
        lo, hi = t0 + run / 2, t0 + run
        return lo, hi, sum(1 for t in ts if lo <= t < hi)

    def count(self, name: str) -> int:
        out = self.sql(f"SELECT count(*) FROM {name}").strip()
        return int(out or 0)

    def first_time(self, name: str) -> Optional[float]:
        out = self.sql(f"SELECT extract(epoch FROM min(written_at)) FROM {name}").strip()
        return float(out) if out else None

    # ---- connectors

    def jdbc_config(self, runtime: str, name: str, table: str, tasks: int) -> Dict[str, str]:
        cfg = {
            "topics": "bench_slow", "tasks.max": str(tasks),
            "connection.url": self.pg["jdbc_url"], "connection.username": self.pg["user"],
            "connection.password": self.pg["password"], "insert.mode": "insert",
            "primary.key.mode": "none", "schema.evolution": "none", "table.name.format": table,
            "batch.size": "500",
            "key.converter": STRING_CONVERTER, "value.converter": JSON_CONVERTER,
            "value.converter.schemas.enable": "true",
        }
        return self._runtime(cfg, runtime, JDBC_SINK, one_per_put=True)

    def file_config(self, runtime: str, name: str, path: Path, tasks: int,
                    topic: str = "bench_fast") -> Dict[str, str]:
        cfg = {"topics": topic, "tasks.max": str(tasks), "file": str(path),
               "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
        return self._runtime(cfg, runtime, FILE_SINK, one_per_put=False)

    def _runtime(self, cfg: Dict[str, str], runtime: str, sink: str, one_per_put: bool):
        if runtime == "classic":
            cfg["connector.class"] = sink
            if one_per_put:
                cfg["consumer.override.max.poll.records"] = "1"
        else:
            cfg["connector.class"] = SHARE_SINK
            cfg["share.sink.connector.class"] = sink
            cfg["share.consumer.bootstrap.servers"] = self.c.bootstrap
            if one_per_put:
                cfg["share.consumer.max.poll.records"] = "1"
                # record_limit: the broker acquires at most max.poll.records per fetch, so one
                # task never holds a whole log batch while it sleeps through it record by record
                cfg["share.consumer.share.acquire.mode"] = "record_limit"
        return cfg

    def start(self, name: str, cfg: Dict[str, str], tasks: int) -> None:
        self.rest.put_connector(name, cfg)
        self.rest.wait_connector_running(name, tasks=tasks, timeout=180)

    def stop(self, name: str) -> None:
        try:
            self.rest.delete_connector(name)
        except Exception as e:  # noqa: BLE001
            self.ctx.say(f"    deleting {name}: {e}")
        time.sleep(2)

    def fresh(self, tag: str, runtime: str) -> Tuple[str, str]:
        self.counter += 1
        name = f"b{tag}_{runtime}_{self.counter}_{int(time.time()) % 100000}"
        return name, name

    def wait_first_row(self, table: str, timeout: float = 180) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = self.first_time(table)
            if t:
                return t
            time.sleep(0.5)
        raise RuntimeError(f"no row in {table} within {timeout}s")

    def failed(self, name: str) -> Optional[str]:
        try:
            st = self.rest.connector_status(name)
        except Exception:  # noqa: BLE001
            return None
        for t in [st.get("connector", {})] + st.get("tasks", []):
            if t.get("state") == "FAILED":
                return (t.get("trace") or "FAILED")[:600]
        return None

    # ---- scenarios

    def slow_rate(self, runtime: str, tasks: int) -> Dict[str, Any]:
        """(a) rows/s of the slow sink over the second half of a run of run_a seconds."""
        name, table = self.fresh("a", runtime)
        self.make_table(table)
        self.set_trigger(table, ROW_SLEEP, 0)
        requests_before = self.broker_requests()
        self.start(name, self.jdbc_config(runtime, name, table, tasks), tasks)
        cpu, requests, engine, rows_then = {}, {}, {}, None
        try:
            t0 = self.wait_first_row(table)
            self._sleep_until(t0 + self.run_a / 2, table, name)
            w = self.cpu_window()
            self._sleep_until(t0 + self.run_a, table, name)
            cpu = w.stop()
            # after the window: the reads cost the worker and brokers a JMX attach
            requests = self.requests_between(requests_before, self.broker_requests())
            if runtime == "share":
                engine = self.engine_counters(name)
            rows_then = int(self.sql(f"SELECT count(*) FROM {table}").split()[0])
        finally:
            self.stop(name)
        ts = self.times(table)
        lo, hi, n = self.second_half(ts, t0, self.run_a)
        r = {"runtime": runtime, "tasks": tasks, "rows_total": len(ts),
             "window_s": hi - lo, "rows_in_window": n, "rows_per_s": round(n / (hi - lo), 1),
             "failed": self.failed(name), "broker_requests": requests,
             "rows_when_requests_read": rows_then}
        if engine:
            r["engine"] = engine
        r.update(cpu)
        if n and cpu.get("worker_cpu_s") is not None:
            r["worker_cpu_ms_per_row"] = round(cpu["worker_cpu_s"] * 1000 / n, 2)
        return r

    def stalled(self, runtime: str, tasks: int,
                extra: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """(b) one task's put blocks for `stall` s: rows/s during the stall vs just before."""
        name, table = self.fresh("b", runtime)
        self.make_table(table)
        self.set_trigger(table, ROW_SLEEP, self.stall)
        cfg = self.jdbc_config(runtime, name, table, tasks)
        cfg.update(extra or {})
        self.start(name, cfg, tasks)
        try:
            t0 = self.wait_first_row(table)
            self._sleep_until(t0 + self.warm_b, table, name)
            t_arm = self.arm_stall(table)
            self._sleep_until(t_arm + self.stall + 1, table, name)
        finally:
            self.stop(name)
        ts = self.times(table)
        base_lo, base_hi = t_arm - min(self.warm_b / 2, 8), t_arm
        st_lo, st_hi = t_arm + 1, t_arm + self.stall - 0.5
        nb = sum(1 for t in ts if base_lo <= t < base_hi)
        ns = sum(1 for t in ts if st_lo <= t < st_hi)
        rb, rs = nb / (base_hi - base_lo), ns / (st_hi - st_lo)
        return {"runtime": runtime, "tasks": tasks, "stall_s": self.stall,
                "settings": dict(extra or {}), "rows_per_s_before": round(rb, 1),
                "rows_per_s_during_stall": round(rs, 1),
                "loss": round(1 - rs / rb, 3) if rb else None, "failed": self.failed(name)}

    def task_change(self, runtime: str, t1: int, t2: int) -> Dict[str, Any]:
        """(c) tasks.max t1 -> t2 mid-run: the longest interval without a row written."""
        name, table = self.fresh("c", runtime)
        self.make_table(table)
        self.set_trigger(table, ROW_SLEEP, 0)
        cfg = self.jdbc_config(runtime, name, table, t1)
        self.start(name, cfg, t1)
        try:
            t0 = self.wait_first_row(table)
            self._sleep_until(t0 + self.warm_c, table, name)
            cfg = dict(cfg, **{"tasks.max": str(t2)})
            t_change = time.time()
            self.rest.put_connector(name, cfg)
            self._sleep_until(t_change + self.after_c, table, name)
            states = self.rest.connector_status(name).get("tasks", [])
        finally:
            self.stop(name)
        ts = [t for t in self.times(table) if t >= t_change - 2]
        before = [t for t in ts if t < t_change]
        gaps = [(b - a, a) for a, b in zip(ts, ts[1:])]
        worst = max(gaps) if gaps else (None, None)
        typical = sorted(g for g, _ in gaps)[len(gaps) // 2] if gaps else None
        return {"runtime": runtime, "tasks_from": t1, "tasks_to": t2,
                "gap_ms": round(worst[0] * 1000) if worst[0] is not None else None,
                "gap_starts_after_change_s": round(worst[1] - t_change, 2) if worst[1] else None,
                "median_gap_ms": round(typical * 1000, 1) if typical is not None else None,
                "rows_before_change_2s": len(before),
                "tasks_running_after": sum(1 for s in states if s.get("state") == "RUNNING"),
                "failed": self.failed(name)}

    def warm_fast(self, run=None) -> List[Dict[str, Any]]:
        """Whole (d) runs, not recorded as (d), so that (d) measures a warm broker and worker:
        one classic run, then sharesink runs until the brokers' JIT compiler threads used less
        than cost.JIT_SHARE_MAX of the brokers' CPU in one (at least `warm_share`, at most
        `warm_share_max`). Measured on this machine, the broker's JIT compiler threads spent
        1.7 CPU s on the first sharesink run of a fresh broker and about 0.3 s after ten;
        sharesink made 0.48 of classic on a cold broker and 0.73 after four runs; on three
        brokers their JIT was 20-45% of their CPU in the fourth. `run(runtime)` makes one run
        (default: a (d) run with 3 tasks). Returns what each run made, for the report."""
        import cost
        run = run or (lambda runtime: self.fast(runtime, 3))
        runs = []
        shares = 0
        for runtime in ["classic"] + ["share"] * self.warm_share_max:
            if runtime == "share" and shares >= self.warm_share and runs \
                    and runs[-1]["runtime"] == "share" \
                    and (runs[-1].get("broker_jit_share") or 1) < cost.JIT_SHARE_MAX:
                break
            shares += runtime == "share"
            r = run(runtime)
            # the window the cost is counted over (its later part) when the run has one
            counted = r.get("steady") or r
            cpu = counted.get("broker_cpu_s")
            jit = (counted.get("broker_cpu_s_by_thread") or {}).get("jit")
            share = round(jit / cpu, 3) if jit is not None and cpu else None
            runs.append({"runtime": runtime, "records_per_s": r.get("records_per_s"),
                         "broker_jit_cpu_s": jit, "broker_cpu_s": cpu,
                         "broker_jit_share": share, "error": r.get("error")})
            self.ctx.say(f"      warm-up {runtime}: {r.get('records_per_s')} records/s, "
                         f"broker {cpu} CPU s (JIT {jit}, {share})")
        return runs

    def fast(self, runtime: str, tasks: int, extra: Optional[Dict[str, str]] = None, *,
             topic: str = "bench_fast", expected: Optional[int] = None, tag: str = "d",
             count_aborted: bool = False) -> Dict[str, Any]:
        """(d) FileStream sink, tasks <= partitions: records/s from the first line to the last
        (or to fast_max seconds after the first line, whichever comes first). `topic` holds
        fixed-width values and the run ends at `expected` lines (default n_fast); `tag` names
        the connector; with `count_aborted`, the lines of aborted transactions' records
        (TxnProducer's "a..." values) are counted before the file goes, as "aborted_written"."""
        expected = self.n_fast if expected is None else expected
        name, _ = self.fresh(tag, runtime)
        path = self.c.state_dir / f"{name}.out"
        width = self.fast_width + 1
        target = expected * width
        label = name + "".join(f" {k}={v}" for k, v in sorted((extra or {}).items()))
        cfg = self.file_config(runtime, name, path, tasks, topic)
        cfg.update(extra or {})
        requests_before = self.broker_requests()
        self.rest.put_connector(name, cfg)
        t_first = t_done = None
        w = None
        engine: Dict[str, Any] = {}
        requests: Dict[str, Dict[str, int]] = {}
        last_size, last_change = 0, time.monotonic()
        timeline = []
        steady = None
        try:
            while True:
                size = path.stat().st_size if path.exists() else 0
                now = time.monotonic()
                if size and t_first is None:
                    t_first = now
                    w = self.cpu_window(label)
                if steady is None and size >= target * STEADY_FROM:
                    # the cost's window: past what the connector's start set compiling
                    steady = (self.cpu_window(f"{label} steady"), size // width)
                if t_first is not None and (not timeline or now - timeline[-1][0] - t_first >= 1):
                    timeline.append((round(now - t_first, 1), size // width))
                if size != last_size:
                    last_size, last_change = size, now
                if size >= target or (t_first is not None and now - t_first >= self.fast_max):
                    t_done = now
                    break
                if now - last_change > 60:
                    break
                time.sleep(0.05)
        finally:
            cpu = w.stop() if w else {}
            steady_cpu = steady[0].stop() if steady else {}
            if t_done is not None:
                # after the clock stopped: the reads cost the worker and brokers a JMX attach
                requests = self.requests_between(requests_before, self.broker_requests())
                if runtime == "share":
                    engine = self.engine_counters(name)
            self.stop(name)
            # with the connector gone: every line its tasks wrote is in the file
            aborted = aborted_lines(path) if count_aborted else None
            try:
                path.unlink()
            except OSError:
                pass
        if t_first is None or t_done is None:
            return {"runtime": runtime, "tasks": tasks, "error":
                    f"only {last_size // (self.fast_width + 1)} of {expected} lines",
                    "failed": self.failed(name),
                    **({"aborted_written": aborted} if count_aborted else {})}
        secs = max(t_done - t_first, 0.05)
        n = min(expected, last_size // width)
        r = {"runtime": runtime, "tasks": tasks, "records": n, "complete": n >= expected,
             "seconds": round(secs, 2), "records_per_s": round(n / secs),
             "settings": extra or {}, "lines_by_second": timeline[:120],
             "broker_requests": requests}
        if count_aborted:
            r["aborted_written"] = aborted
        if engine:
            r["engine"] = engine
        r.update(cpu)
        if steady_cpu and n > steady[1]:
            r["steady"] = {"records": n - steady[1], **steady_cpu}
        if n and cpu.get("worker_cpu_s") is not None:
            r["worker_cpu_ms_per_1000"] = round(cpu["worker_cpu_s"] * 1e6 / n, 2)
        return r

    def share_consumer_on_fast(self, client: str, members: int = 3, *, topic: str = "bench_fast",
                               records: Optional[int] = None, tag: str = "d",
                               group_config: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
        """(d)'s records read by a share consumer alone, without Connect: Java's
        KafkaShareConsumer (ShareConsumerPerformance, implicit acknowledgement) or sharesink's
        engine (sharesink-bench, ACCEPT per batch), `members` members as (d) runs 3 tasks, a
        fresh group with the record-lock window the connector gives its group. The brokers' CPU
        is counted from the client's first record to its last, their requests over the whole
        client run: what the same records cost the brokers through that client. Another `topic`
        is read until `records` (default n_fast) with `group_config` added to the group's; `tag`
        names the group."""
        import consumers
        cons = consumers.Consumers(self.ctx)
        records = self.n_fast if records is None else records
        self.counter += 1
        group = f"b{tag}_{client}_{self.counter}_{int(time.time()) % 100000}"
        window: Dict[str, Any] = {}

        def on_line(line: str) -> None:
            event = consumers.progress_event(client, line)
            if event == "first" and "w" not in window:
                window["w"] = self.cpu_window(group)
            elif event == "last" and "w" in window and "cpu" not in window:
                window["cpu"] = window["w"].stop()
        settings = {"share.partition.max.record.locks": "4000", **(group_config or {})}
        before = self.broker_requests()
        if client == "engine":
            r = cons.engine(topic, group, records, members, on_line=on_line,
                            group_config=settings)
        else:
            r = cons.java_share(topic, group, records, members, on_line=on_line,
                                group_config=settings)
        if "w" in window and "cpu" not in window:
            window["cpu"] = window["w"].stop()
        r["broker_requests"] = self.requests_between(before, self.broker_requests())
        r["group_config"] = settings
        r.update({k: v for k, v in window.get("cpu", {}).items() if k.startswith("broker")
                  or k in ("machine_busy", "window_wall_s")})
        if r.get("records") and r.get("broker_cpu_s") is None:
            r["error"] = r.get("error") or "the client's first or last record was not seen"
        return r

    def fast_on_txn(self, runtime: str, extra: Dict[str, str]) -> Dict[str, Any]:
        """(dt) a (d) run, 3 tasks, on bench_txn: until the committed records are written, the
        lines of aborted ones counted."""
        return self.fast(runtime, 3, extra, topic="bench_txn", expected=self._txn_committed(),
                         tag="t", count_aborted=True)

    def share_consumer_on_txn(self, client: str) -> Dict[str, Any]:
        """(dt) bench_txn's committed records read by a share consumer alone, its group at
        read_committed."""
        return self.share_consumer_on_fast(client, topic="bench_txn", records=self._txn_committed(),
                                           tag="t", group_config=dict(READ_COMMITTED_GROUP))

    def _txn_committed(self) -> int:
        if self.n_txn_committed is None:
            raise RuntimeError(self.txn_error)
        if not self.n_txn_committed:
            raise RuntimeError(f"bench_txn holds no committed record: {self.txn_produced}")
        return self.n_txn_committed

    def latency_fast(self, runtime: str, tasks: int, rate: float,
                     seconds: Optional[float] = None) -> Dict[str, Any]:
        """(e) FileStream sink at a fixed produce rate: produce -> line-in-the-file latency.
        The producer sends rate x seconds records (lat_fast_s by default), flat out when it
        cannot keep the rate."""
        name, _ = self.fresh("e", runtime)
        topic = f"lat_{name}"
        self.c.create_topic(topic, partitions=3)
        path = self.c.state_dir / f"{name}.out"
        cfg = self.file_config(runtime, name, path, tasks)
        cfg["topics"] = topic
        self.start(name, cfg, tasks)
        # the tasks join their group while the producer warms up
        prod = self.start_producer(topic, rate, seconds or self.lat_fast_s, "plain",
                                   self.ctx.log(f"rate-producer-{name}"),
                                   warmup_s=self.lat_warmup_s)
        samples: List[Tuple[int, float]] = []   # (stamp µs, wall s when first seen) per read line
        t_end_produce = None
        cpu_window = self.cpu_window()   # the broker's and the worker's CPU while they keep up
        timeline = self.load_timeline(prod.pid)   # what the machine did in each late episode
        pos, sent = 0, None
        step = LAT_LINE * LAT_SAMPLE
        try:
            with open(path, "ab"):
                pass
            with open(path, "rb") as f:
                while True:
                    f.seek(0, 2)
                    size = f.tell()
                    now = time.time()
                    complete = size - size % LAT_LINE
                    while pos + LAT_LINE <= complete:
                        f.seek(pos)
                        samples.append((int(f.read(16)), now))
                        pos += step
                    if t_end_produce is None and prod.poll() is not None:
                        t_end_produce = now
                        sent = self.producer_result(prod, 10)
                    if sent is not None and (complete // LAT_LINE >= sent["sent"]
                                             or now - t_end_produce > self.lat_drain_s):
                        break
                    time.sleep(0.005)
            lines = complete // LAT_LINE
            t_last = time.time()
        finally:
            cpu = cpu_window.stop()
            timeline.stop()
            if prod.poll() is None:
                prod.kill()
            self.stop(name)
            try:
                path.unlink()
            except OSError:
                pass
        skip_us = (sent or {}).get("first_us", 0) + int(self.lat_skip_s * 1e6)
        timed = [(st, t) for st, t in samples if st >= skip_us]
        lat = [t * 1000 - st / 1000 for st, t in timed]
        arrivals = [t for _, t in timed]
        # lines never written count with their age at the end (a lower bound), one in LAT_SAMPLE
        r = self._latency_figures(runtime, tasks, rate, sent, lines, lat, arrivals, t_end_produce,
                                  sampled=LAT_SAMPLE,
                                  unwritten=max(0, sent["sent"] - lines) // LAT_SAMPLE,
                                  unwritten_age_ms=(t_last - t_end_produce) * 1000)
        # what the sink wrote while the producer ran (after the first second): the rate it
        # sustained with a live producer on the same machine
        t1 = (skip_us / 1e6) if sent else None
        if t1 is not None and t_end_produce is not None and t_end_produce - t1 > 1:
            n = sum(1 for t in arrivals if t1 <= t <= t_end_produce) * LAT_SAMPLE
            r["written_per_s_while_producing"] = round(n / (t_end_produce - t1))
        r["failed"] = self.failed(name)
        import episodes
        r["episodes"] = episodes.profile([(st / 1e6, t) for st, t in timed], r.get("p99_ms"),
                                         timeline, LAT_SAMPLE)
        r.update(cpu)
        for who in ("broker", "worker"):
            if lines and cpu.get(f"{who}_cpu_s") is not None:
                r[f"{who}_cpu_s_per_m"] = round(cpu[f"{who}_cpu_s"] * 1e6 / lines, 2)
        return r

    def slow_timed_table(self, table: str) -> None:
        """(Re)creates `table` for the timed slow sink of (e) and (g): each row's produce time and
        the moment its INSERT finished, behind a trigger that sleeps ROW_SLEEP s per row."""
        self.sql(f"""
DROP TABLE IF EXISTS {table};
CREATE TABLE {table} (id bigint NOT NULL, produced_us bigint NOT NULL,
                      written_at timestamptz NOT NULL DEFAULT clock_timestamp());
ALTER TABLE {table} OWNER TO {self.pg['user']};
CREATE FUNCTION {table}_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep({ROW_SLEEP}); NEW.written_at := clock_timestamp(); RETURN NEW; END $$;
CREATE TRIGGER {table}_slow BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {table}_slow();
""")

    def latency_slow(self, runtime: str, tasks: int, rate: float) -> Dict[str, Any]:
        """(e) the JDBC sink with the slow trigger at a fixed produce rate: produce -> INSERT."""
        name, table = self.fresh("e", runtime)
        topic = f"lat_{name}"
        self.c.create_topic(topic, partitions=3)
        self.slow_timed_table(table)
        cfg = self.jdbc_config(runtime, name, table, tasks)
        cfg["topics"] = topic
        self.start(name, cfg, tasks)
        prod = self.start_producer(topic, rate, self.lat_slow_s, "json",
                                   self.ctx.log(f"rate-producer-{name}"),
                                   warmup_s=self.lat_warmup_s)
        try:
            sent = self.producer_result(prod, self.lat_slow_s + 120)
            t_end_produce = time.time()
            deadline = t_end_produce + self.lat_drain_s
            while time.time() < deadline and self.count(table) < sent["sent"]:
                time.sleep(0.5)
            t_stop = time.time()
            written = self.count(table)
        finally:
            if prod.poll() is None:
                prod.kill()
            failed = self.failed(name)
            self.stop(name)
        skip_us = sent.get("first_us", 0) + int(self.lat_skip_s * 1e6)
        out = self.sql(f"SELECT extract(epoch FROM written_at), produced_us FROM {table} "
                       f"WHERE produced_us >= {skip_us} AND written_at <= to_timestamp({t_stop})")
        rows = [tuple(float(x) for x in ln.split("|")) for ln in out.split() if "|" in ln]
        lat = [w * 1000 - p / 1000 for w, p in rows]
        arrivals = [w for w, _ in rows]
        # what was sent but not written by the end counts with its age then (a lower bound)
        expected_timed = sent["sent"] - round(self.lat_skip_s * rate)
        missing = max(0, expected_timed - len(rows))
        # rows the tasks still wrote while the connector was being deleted are not counted
        r = self._latency_figures(runtime, tasks, rate, sent, written, lat, arrivals,
                                  t_end_produce, sampled=1, unwritten=missing,
                                  unwritten_age_ms=(t_stop - t_end_produce) * 1000)
        r["failed"] = failed
        return r

    def scale(self, tasks: int, per_task_rate: float) -> Dict[str, Any]:
        """(f) sharesink with `tasks` tasks on the 12-partition topic, slow sink: rows/s over
        the second half of a run against the ideal (tasks x one task's rate), and the worker's
        footprint in the middle of that half."""
        import proc
        name, table = self.fresh("f", "share")
        self.make_table(table)
        self.set_trigger(table, ROW_SLEEP, 0)
        cfg = self.jdbc_config("share", name, table, tasks)
        cfg["topics"] = "bench_scale"
        # one PostgreSQL connection per task (Debezium's pool keeps 5 by default): 100 tasks
        # stay within the harness's max_connections
        cfg.update({"connection.pool.min_size": "1", "connection.pool.max_size": "1",
                    "connection.pool.acquire_increment": "1"})
        # Ten records per put (200 ms of trigger): one ShareFetch and one ShareAcknowledge per
        # ten rows. With one record per put, as in (a), the broker's request handling (about
        # 6 ms of broker CPU per row here) fills this 2-core machine before 50 tasks do.
        cfg["share.consumer.max.poll.records"] = str(SCALE_RECORDS_PER_PUT)
        pid = int(self.c.procs.recorded("worker-0")["pid"])
        ports = [self.c.broker_ports(i).plaintext for i in range(self.c.brokers)]
        jcmd = str(Path(self.c.java_cmd("x")[0]).with_name("jcmd"))
        idle = proc.footprint(pid, ports)
        t_put = time.time()
        self.rest.put_connector(name, cfg)
        self.rest.wait_connector_running(name, tasks=tasks, timeout=300)
        started_s = time.time() - t_put
        cpu, busy = {}, {}
        try:
            t0 = self.wait_first_row(table)
            self._sleep_until(t0 + self.run_f / 2, table, name)
            w = self.cpu_window()
            self._sleep_until(t0 + self.run_f * 3 / 4, table, name)
            busy = proc.footprint(pid, ports)
            heap = self._heap_used_mib(pid, jcmd)
            engine_mib = self.engine_off_heap_mib(pid, name)
            runtime_conns = self.runtime_client_connections(pid, name)
            self._sleep_until(t0 + self.run_f, table, name)
            cpu = w.stop()
        finally:
            self.stop(name)
        ts = self.times(table)
        lo, hi, n = self.second_half(ts, t0, self.run_f)
        ideal = tasks * per_task_rate
        r = {"tasks": tasks, "partitions": 12, "seconds_to_running": round(started_s, 1),
             "rows_per_s": round(n / (hi - lo), 1), "ideal_rows_per_s": round(ideal, 1),
             "of_ideal": round(n / (hi - lo) / ideal, 3) if ideal else None,
             "idle": idle, "running": busy, "heap_used_mib": heap,
             "failed": self.failed(name)}
        r.update(cpu)
        for k in ("rss_mib", "threads", "broker_connections"):
            if busy.get(k) is not None and idle.get(k) is not None:
                r[f"{k}_added"] = round(busy[k] - idle[k], 1)
                r[f"{k}_per_task"] = round((busy[k] - idle[k]) / tasks, 2)
        # connections of the clients Connect builds for each task, the rest is the engine's
        r["runtime_client_connections"] = runtime_conns
        if "broker_connections_added" in r:
            rt = sum(runtime_conns.values())
            r["engine_connections_per_task"] = round((r["broker_connections_added"] - rt) / tasks, 2)
            r["runtime_connections_per_task"] = round(rt / tasks, 2)
        # the engine library's own allocator, all tasks of the worker (the worker runs no other
        # sharesink connector during (f))
        r["engine_off_heap_mib"] = engine_mib
        r["engine_off_heap_mib_per_task"] = round(engine_mib / tasks, 2) if engine_mib else None
        return r

    def autoscale(self, mode: str) -> Dict[str, Any]:
        """(g) the slow sink of (a) under a burst then a trickle: `mode` 'auto' (sharesink's
        autoscaler between AUTOSCALE_MIN and AUTOSCALE_MAX = tasks.max), 'max' or 'min' (fixed
        tasks.max). Time to drain the burst (its first record to the moment every record
        produced up to its last is written), and task-seconds (RUNNING tasks in the connector's
        status, sampled every 0.5 s, over the run: the trickle's first record to the moment
        every record is written). The fixed minimum is cut g_min_cap s after the burst and its
        drain extrapolated from the rate it drained at (at ~70 rows/s net it would take many
        minutes)."""
        import threading
        name, table = self.fresh("g", mode)
        topic = f"burst_{name}"
        self.c.create_topic(topic, partitions=3)
        self.slow_timed_table(table)
        fixed = AUTOSCALE_MIN if mode == "min" else AUTOSCALE_MAX
        cfg = self.jdbc_config("share", name, table, fixed)
        cfg["topics"] = topic
        if mode == "auto":
            cfg.update({"share.tasks.autoscale": "true",
                        "share.tasks.autoscale.min": str(AUTOSCALE_MIN)})
        start_tasks = AUTOSCALE_MIN if mode in ("auto", "min") else AUTOSCALE_MAX
        self.start(name, cfg, start_tasks)

        samples: List[Tuple[float, int, int]] = []  # (wall time, RUNNING tasks, tasks listed)
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                try:
                    ts = self.rest.connector_status(name).get("tasks", [])
                    samples.append((time.time(), sum(1 for t in ts if t.get("state") == "RUNNING"),
                                    len(ts)))
                except Exception:  # noqa: BLE001 - a missed sample, the next one counts
                    pass
                stop.wait(0.5)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        log = self.ctx.log
        trickle = burst = None
        failed = None
        load0 = round(os.getloadavg()[0], 2)
        t_launch = time.time()
        try:
            trickle = self.start_producer(topic, AUTOSCALE_TRICKLE, self.g_quiet + self.g_after,
                                          "json", log(f"rate-producer-{name}-trickle"))
            time.sleep(self.g_quiet)
            burst = self.start_producer(topic, AUTOSCALE_BURST_RATE,
                                        self.g_burst / AUTOSCALE_BURST_RATE, "json",
                                        log(f"rate-producer-{name}-burst"))
            b = self.producer_result(burst, 300)
            b_first = b["first_us"] / 1e6
            b_last = b_first + b["seconds"]
            ctx_cap = b_first + self.g_min_cap if mode == "min" else None
            while trickle.poll() is None:
                if ctx_cap and time.time() >= ctx_cap:
                    trickle.kill()
                    break
                time.sleep(1)
                f = self.failed(name)
                if f:
                    raise RuntimeError(f"{name} failed: {f}")
            tr = self.producer_result(trickle, 60) if not ctx_cap or trickle.returncode == 0 \
                else None
            sent = b["sent"] + (tr["sent"] if tr else 0)
            deadline = time.time() + 90
            while tr and time.time() < deadline and self.count(table) < sent:
                time.sleep(0.5)
            t_end = time.time()
        finally:
            for pr in (trickle, burst):
                if pr is not None and pr.poll() is None:
                    pr.kill()
            stop.set()
            sampler.join(timeout=10)
            failed = self.failed(name)
            self.stop(name)
        # the burst's drain: every record produced up to its last one written
        b_last_us = int(b_last * 1e6)
        out = self.sql(f"SELECT count(*), extract(epoch FROM max(written_at)) FROM {table} "
                       f"WHERE produced_us <= {b_last_us}").split("|")
        written_by_burst_end = int(out[0])
        drained_at = float(out[1]) if out[1].strip() else None
        tr_first = t_launch
        if tr:
            tr_first = tr["first_us"] / 1e6
        # records produced before the burst ended: the burst, and the trickle up to then
        expected = b["sent"] + int(AUTOSCALE_TRICKLE * max(0.0, b_last - tr_first))
        extrapolated = False
        if written_by_burst_end < expected - AUTOSCALE_TRICKLE:  # not drained (cut: fixed min)
            extrapolated = True
            rows = [float(x) for x in self.sql(
                f"SELECT extract(epoch FROM written_at) FROM {table} "
                f"WHERE written_at >= to_timestamp({b_first + 10})").split()]
            span = (max(rows) - (b_first + 10)) if rows else 0
            net = len(rows) / span - AUTOSCALE_TRICKLE if span > 0 else 0
            left = expected - written_by_burst_end
            drained_at = (max(rows) if rows else t_end) + (left / net if net > 0 else float("inf"))
        drain_s = drained_at - b_first if drained_at is not None else None
        # task-seconds: the RUNNING tasks between the trickle's first record and the end (every
        # record written; the extrapolated drain for the cut fixed minimum)
        t0 = tr_first
        t1 = max(t_end, drained_at) if extrapolated and drained_at != float("inf") else t_end
        task_s, last_t, last_n = 0.0, t0, None
        for t, n, _ in samples:
            if t < t0:
                last_n = n
                continue
            if last_n is not None:
                task_s += last_n * (min(t, t1) - last_t)
            last_t, last_n = t, n
            if t >= t1:
                break
        if last_n is not None and last_t < t1:
            task_s += last_n * (t1 - last_t)  # the cut fixed run goes on at its count
        # what the autoscaler decided, from the worker's log
        steps = self._autoscale_steps(name, samples, b_first) if mode == "auto" else []
        r = {"mode": mode, "tasks_fixed": None if mode == "auto" else fixed,
             "burst": b["sent"], "burst_send_s": round(b["seconds"], 2),
             "trickle_per_s": AUTOSCALE_TRICKLE, "trickle_sent": tr["sent"] if tr else None,
             "drain_s": round(drain_s, 1) if drain_s is not None else None,
             "drain_extrapolated": extrapolated,
             "run_s": round(t1 - t0, 1), "task_seconds": round(task_s),
             "mean_tasks": round(task_s / (t1 - t0), 2) if t1 > t0 else None,
             "max_running": max((n for _, n, _ in samples), default=None),
             "steps": steps, "failed": failed}
        r["tasks_timeline"] = self._timeline(samples, b_first)
        r["load_avg_1m"] = [load0, round(os.getloadavg()[0], 2)]
        # rows/s while the run's most tasks were RUNNING and the burst was still draining: what
        # the same tasks did in each run (the machine is shared; a busier one drains slower)
        top = r["max_running"]
        t_top = next((t for t, n, _ in samples if n == top and t >= b_first), None)
        if t_top is not None and drained_at is not None and not extrapolated \
                and drained_at - 5 > t_top + 5:
            n = int(self.sql(f"SELECT count(*) FROM {table} WHERE written_at BETWEEN "
                             f"to_timestamp({t_top + 5}) AND to_timestamp({drained_at - 5})")
                    or 0)
            r["rows_per_s_at_most_tasks"] = round(n / (drained_at - 5 - (t_top + 5)), 1)
            r["s_to_most_tasks"] = round(t_top - b_first, 1)
        return r

    def _autoscale_steps(self, name: str, samples, t_burst: float) -> List[Dict[str, Any]]:
        """Each "autoscaling to N tasks" line of the worker's log, with what it cost: the time
        from the decision until N tasks were RUNNING, and the longest time without a row written
        from the decision to 15 s after it (one record per put, 20 ms each: ~2 ms between rows
        at 12 tasks, ~11 ms at 2)."""
        import re
        text = self.c.current_log("worker-0")
        steps = []
        for m in re.finditer(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] INFO .*?"
                             r"Connector " + re.escape(name) + r": autoscaling to (\d+) tasks: "
                             r"([^\n]*?)(?: \(io\.sharesink[^)\n]*\))?$", text, re.M):
            t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + \
                int(m.group(2)) / 1000
            to = int(m.group(3))
            running = next((st for st, n, listed in samples if st >= t and n == to
                            and listed == to), None)
            ts = [float(x) for x in self.sql(
                f"SELECT extract(epoch FROM written_at) FROM {name} WHERE written_at BETWEEN "
                f"to_timestamp({t}) AND to_timestamp({t + 15}) ORDER BY written_at").split()]
            edges = [t] + ts + [t + 15]
            gap = max((b - a for a, b in zip(edges, edges[1:])), default=None)
            steps.append({"to": to, "at": round(t, 3), "s_after_burst": round(t - t_burst, 1),
                          "s_to_running": round(running - t, 1) if running else None,
                          "longest_gap_ms": round(gap * 1000) if gap is not None else None,
                          "why": m.group(4)[:300]})
        return steps

    @staticmethod
    def _timeline(samples, t_ref: float) -> List[List[float]]:
        """[seconds from t_ref, RUNNING tasks] at each change of the count."""
        out, last = [], None
        for t, n, _ in samples:
            if n != last:
                out.append([round(t - t_ref, 1), n])
                last = n
        return out

    @staticmethod
    def _heap_used_mib(pid: int, jcmd: str) -> Optional[float]:
        try:
            p = subprocess.run([jcmd, str(pid), "GC.heap_info"], capture_output=True, text=True,
                               timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        for line in p.stdout.splitlines():
            if "used" in line and "total" in line:
                v = line.split("used")[1].split()[0]
                num = float("".join(ch for ch in v if ch.isdigit()))
                return round(num / 1024, 1) if v.upper().endswith("K") else num
        return None

    def _latency_figures(self, runtime, tasks, rate, sent, written, lat, arrivals, t_end_produce,
                         sampled, unwritten=0, unwritten_age_ms=0.0) -> Dict[str, Any]:
        if not sent:
            return {"runtime": runtime, "tasks": tasks, "rate": rate,
                    "error": "the producer did not finish"}
        # "kept up": at most one second of records still unwritten one second after the
        # last send (the queue did not grow).
        by_end = sum(1 for t in arrivals if t <= t_end_produce + 1) * sampled
        timed = sent["sent"] - round(self.lat_skip_s * rate)
        backlog = max(0, timed - by_end)
        lat = sorted(lat + [unwritten_age_ms] * unwritten)
        return {"runtime": runtime, "tasks": tasks, "rate": round(rate, 1),
                "achieved_rate": sent.get("records_per_s"), "sent": sent["sent"],
                "send_failed": sent.get("failed"), "written": written,
                "timed": len(lat), "one_in": sampled, "unwritten_at_end": unwritten,
                "backlog_1s_after_last_send": backlog, "kept_up": backlog <= rate,
                **percentiles(lat)}

    def _sleep_until(self, t_wall: float, table: str, name: str) -> None:
        last = 0.0
        while time.time() < t_wall:
            time.sleep(min(1.0, max(0.05, t_wall - time.time())))
            if time.monotonic() - last > 5:
                last = time.monotonic()
                f = self.failed(name)
                if f:
                    raise RuntimeError(f"{name} failed: {f}")
                self.ctx.say(f"      ... {self.count(table):,} rows")


def txn_summary(text: str) -> Dict[str, int]:
    """TxnProducer's last line, "committed N aborted M transactions T", as {committed: N,
    aborted: M, transactions: T} (records, records, transactions); {} without it."""
    import re
    found = re.findall(r"^committed (\d+) aborted (\d+) transactions (\d+)$", text or "", re.M)
    if not found:
        return {}
    return dict(zip(("committed", "aborted", "transactions"), map(int, found[-1])))


def aborted_lines(path: Path) -> Optional[int]:
    """Lines of a FileStream sink's file that hold an aborted transaction's record (TxnProducer's
    "a%09d" values): 0 when the sink wrote no file, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.startswith(b"a"))
    except FileNotFoundError:
        return 0
    except OSError:
        return None


def median_run(runs: List[Dict[str, Any]], key: str,
               keep: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The run with the median `key` among those that measured it (the upper one of two), with
    `key`, `keep` and any error of every run under "runs"; a failed run only when all failed."""
    ok = sorted((r for r in runs if not r.get("error") and r.get(key) is not None),
                key=lambda r: r[key])
    if not ok:
        return runs[-1] if runs else {"error": "not run"}
    pick = dict(ok[len(ok) // 2])
    if len(runs) > 1:
        pick["runs"] = [{k: r.get(k) for k in (key,) + keep + ("error",)} for r in runs]
    return pick


def engine_counters(read: Dict[str, Dict[str, float]], counters) -> Dict[str, Any]:
    """sharesink's engine metrics as one JMX read gave them ({attribute: {task MBean: value}}):
    `counters` summed over the tasks, the other attributes (averages) as their mean and each
    task's under `<key>_per_task`; keys without the `share-engine-` prefix and `-total` suffix."""
    out: Dict[str, Any] = {}
    for name, values in read.items():
        if not values:
            continue
        key = name.removeprefix("share-engine-").removesuffix("-total").replace("-", "_")
        if name in counters:
            out[key] = round(sum(values.values()))
        else:
            out[key] = round(sum(values.values()) / len(values), 2)
            out[key + "_per_task"] = sorted(round(v, 2) for v in values.values())
    return out


def percentiles(lat_ms: List[float]) -> Dict[str, Optional[float]]:
    """p50, p99, p99.9 and max (nearest rank) of latencies in ms."""
    s = sorted(lat_ms)
    n = len(s)

    def q(p):
        return round(s[min(n - 1, max(0, math.ceil(p * n) - 1))], 1) if n else None
    return {"p50_ms": q(0.5), "p99_ms": q(0.99), "p999_ms": q(0.999), "max_ms": q(1.0)}


# (dt)'s Connect rows, in the order each round runs them: (key, runtime, settings)
TXN_ROWS = (("t_classic", "classic", READ_COMMITTED_CLASSIC),
            ("t_share", "share", READ_COMMITTED_SHARE),
            ("t_share_fixed_fetch", "share", {**READ_COMMITTED_SHARE, **FIXED_FETCH_BYTES}))


def run_txn(ctx, cx: Connect, attempt, results: Dict[str, Any]) -> None:
    """(dt): fast_pairs rounds of the TXN_ROWS runs on bench_txn, then as many runs of Java's
    KafkaShareConsumer on it; each row is its run with the median rate, every run kept whole
    under <key>_all for the cost (bench/cost.py)."""
    keys = [key for key, _, _ in TXN_ROWS] + ["t_java_share"]
    if "t" not in ctx.scenarios:
        for key in keys:
            results[key] = {"error": "not run (--scenarios)"}
        return
    # Even after (d) the brokers compile the read_committed acquire on the first runs here:
    # their JIT was 26% of (dt)'s CPU after (d)'s warm-up (2026-12-08)
    ctx.say(f"connect: warming up (dt): one classic and {cx.warm_share} to "
            f"{cx.warm_share_max} sharesink runs on bench_txn, not recorded")
    try:
        results["t_warmup"] = cx.warm_fast(lambda runtime: cx.fast_on_txn(
            runtime, dict(READ_COMMITTED_CLASSIC if runtime == "classic"
                          else READ_COMMITTED_SHARE)))
    except Exception as e:  # noqa: BLE001 - the measured runs report their own failures
        ctx.say(f"connect: warm-up failed: {e.__class__.__name__}: {str(e)[:300]}")
    runs: Dict[str, List[Dict[str, Any]]] = {key: [] for key in keys}
    for _ in range(cx.fast_pairs):
        for key, runtime, settings in TXN_ROWS:
            runs[key].append(attempt(key, cx.fast_on_txn, runtime, dict(settings)))
    for _ in range(cx.fast_pairs):
        runs["t_java_share"].append(attempt("t_java_share", cx.share_consumer_on_txn, "java"))
    for key, each in runs.items():
        results[key] = median_run(each, "records_per_s", ("broker_cpu_s", "aborted_written"))
        results[f"{key}_all"] = each


def run(ctx, res: Dict[str, Any]) -> None:
    cx = Connect(ctx)
    out: Dict[str, Any] = {"share_tasks": cx.share_tasks}
    res["connect"] = out
    try:
        cx.setup()
    except Exception as e:  # noqa: BLE001
        reason = f"set-up failed: {e.__class__.__name__}: {str(e)[:500]}"
        ctx.say("connect: " + reason)
        res["connect_reason"] = reason
        return
    share_n = cx.share_tasks
    results: Dict[str, Any] = {}
    out["results"] = results

    def attempt(key: str, fn, *a):
        if key[0] not in ctx.scenarios:
            results[key] = {"error": "not run (--scenarios)"}
            return results[key]
        ctx.say(f"connect {key}: {fn.__name__}{a} ...")
        try:
            r = fn(*a)
        except Exception as e:  # noqa: BLE001 - recorded; the other scenarios still run
            r = {"error": f"{e.__class__.__name__}: {str(e)[:600]}"}
        results[key] = r
        ctx.say(f"    {json.dumps(r)}")
        return r

    a_cl = attempt("a_classic", cx.slow_rate, "classic", 3)
    attempt("a_share", cx.slow_rate, "share", share_n)
    attempt("b_classic", cx.stalled, "classic", 3)
    # The loss compares two short windows whose rates vary by about 10% from run to run, more
    # than the margin between 1/N and what one stall costs: full mode stalls sharesink three
    # times and reports the run with the median loss (every run is kept under "runs").
    results["b_share"] = median_run([attempt("b_share", cx.stalled, "share", share_n)
                                     for _ in range(cx.stall_repeats)], "loss")
    attempt("b_share_window", cx.stalled, "share", share_n, dict(KAFKA_DEFAULT_WINDOW))
    attempt("c_classic", cx.task_change, "classic", 2, 3)
    attempt("c_share", cx.task_change, "share", 2, 3)
    if "d" in ctx.scenarios:
        ctx.say(f"connect: warming up (d): one classic and {cx.warm_share} to "
                f"{cx.warm_share_max} sharesink runs (until the brokers' JIT is under a tenth "
                "of their CPU), not recorded")
        try:
            results["d_warmup"] = cx.warm_fast()
        except Exception as e:  # noqa: BLE001 - the measured runs report their own failures
            ctx.say(f"connect: warm-up failed: {e.__class__.__name__}: {str(e)[:300]}")
    d_cl_runs, d_sh_runs, d_aof_runs = [], [], []
    for _ in range(cx.fast_pairs):
        d_cl_runs.append(attempt("d_classic", cx.fast, "classic", 3))
        d_sh_runs.append(attempt("d_share", cx.fast, "share", 3))
        # (d'') next to each (d) run: acknowledgements on the fetch, against on their own
        d_aof_runs.append(attempt("d_share_ack_on_fetch", cx.fast, "share", 3,
                                  dict(ACK_ON_FETCH)))
    d_cl = results["d_classic"] = median_run(d_cl_runs, "records_per_s", ("broker_cpu_s",))
    results["d_share"] = median_run(d_sh_runs, "records_per_s", ("broker_cpu_s",))
    results["d_share_ack_on_fetch"] = median_run(d_aof_runs, "records_per_s", ("broker_cpu_s",))
    # every run of each runtime, whole: the cost figures add them all up (bench/cost.py)
    results["d_classic_all"], results["d_share_all"] = d_cl_runs, d_sh_runs
    results["d_share_ack_on_fetch_all"] = d_aof_runs
    # the same records through a share consumer alone: what they cost the brokers without
    # Connect, through Java's KafkaShareConsumer and through sharesink's engine
    for client in ("java_share", "engine"):
        runs = [attempt(f"d_{client}", cx.share_consumer_on_fast,
                        "java" if client == "java_share" else "engine")
                for _ in range(cx.fast_pairs)]
        results[f"d_{client}"] = median_run(runs, "records_per_s", ("broker_cpu_s",))
        results[f"d_{client}_all"] = runs
    # (d') Kafka's default record-lock window, against sharesink's default (the maximum)
    attempt("d_share_window_2000", cx.fast, "share", 3, dict(KAFKA_DEFAULT_WINDOW))
    # (d*) on several brokers: the same pairs with the brokers on one core and the worker on
    # the other, so that the brokers' share-group work no longer takes the worker's CPU
    dpin_cl = dpin_sh = {"error": "not run (one broker or one core)"}
    if "d" in ctx.scenarios and cx.c.brokers > 1 and (os.cpu_count() or 1) >= 2:
        ctx.say("connect: (d*) the brokers on core 0, the worker on core 1")
        pin_cl_runs, pin_sh_runs = [], []
        try:
            cx.place_on_own_cores(True)
            for _ in range(cx.fast_pairs):
                pin_cl_runs.append(attempt("dpin_classic", cx.fast, "classic", 3))
                pin_sh_runs.append(attempt("dpin_share", cx.fast, "share", 3))
        except (OSError, subprocess.CalledProcessError) as e:
            ctx.say(f"connect: (d*) not run: {e}")
        finally:
            cx.place_on_own_cores(False)
        if pin_cl_runs:
            dpin_cl = median_run(pin_cl_runs, "records_per_s", ("broker_cpu_s",))
            dpin_sh = median_run(pin_sh_runs, "records_per_s", ("broker_cpu_s",))
    results["dpin_classic"], results["dpin_share"] = dpin_cl, dpin_sh
    # (dt) after (d): the brokers are warm
    run_txn(ctx, cx, attempt, results)

    # (e) latency at fixed rates, from what classic sustains in this run
    if "e" in ctx.scenarios:
        # The fast sink: classic with the producer sending flat out (asked for four times what
        # classic drained from a backlog in (d)). The producer, the broker's produce path and
        # the worker share the machine, so this is well below (d): rates taken from (d) left no
        # CPU to spare (both cores 97% busy at a quarter of it in a full run), and the latency
        # compared was queueing for CPU, not the runtimes'.
        d_rate = connect_figures.val(d_cl, "records_per_s") or 100_000
        sus = attempt("e_fast_sustained_classic", cx.latency_fast, "classic", 3, 4 * d_rate,
                      SUSTAINED_RECORDS_S / 4)
        fast_base = connect_figures.val(sus, "written_per_s_while_producing")
        slow_base = connect_figures.val(a_cl, "rows_per_s")
        res["latency_basis"] = {
            "fast_records_per_s": fast_base or 100_000,
            "fast_from": ("classic with the producer sending flat out (asked for "
                          f"{4 * d_rate:,.0f}/s, 4 × (d) classic; it sent "
                          f"{connect_figures.val(sus, 'achieved_rate') or 0:,.0f}/s)") if fast_base
            else "nominal 100,000/s (classic's sustained rate not measured)",
            "slow_rows_per_s": slow_base or 130,
            "slow_from": "(a) classic" if slow_base else "nominal 130/s ((a) not measured)"}
        for frac in LAT_FAST_FRACTIONS:
            rate = frac * res["latency_basis"]["fast_records_per_s"]
            # A p99 over 20 s is moved by one episode of a few hundred ms on this shared machine
            # (a GC, a burst of the producer), in either runtime: each runtime runs
            # lat_fast_repeats times, alternating which goes first, and the row is its run with
            # the median p99 (every run is kept under "runs").
            runs: Dict[str, List[Dict[str, Any]]] = {"classic": [], "share": []}
            for rep in range(cx.lat_fast_repeats):
                order = ("classic", "share") if rep % 2 == 0 else ("share", "classic")
                for runtime in order:
                    key = f"e_fast_{int(frac * 100)}_{runtime}"
                    runs[runtime].append(attempt(key, cx.latency_fast, runtime, 3, rate))
            for runtime in ("classic", "share"):
                key = f"e_fast_{int(frac * 100)}_{runtime}"
                results[key] = median_run(runs[runtime], "p99_ms",
                                          ("p50_ms", "p999_ms", "max_ms", "kept_up"))
        for frac in LAT_SLOW_FRACTIONS:
            rate = frac * res["latency_basis"]["slow_rows_per_s"]
            for runtime, tasks in (("classic", 3), ("share", share_n)):
                key = f"e_slow_{int(frac * 100)}_{runtime}"
                attempt(key, cx.latency_slow, runtime, tasks, rate)
    # (f) the KIP's headline: many more tasks than partitions
    if "f" in ctx.scenarios:
        cl_rate = connect_figures.val(a_cl, "rows_per_s")
        per_task = cl_rate / 3 if cl_rate else 1 / ROW_SLEEP
        res["scale_basis"] = {
            "per_task_rows_per_s": round(per_task, 2),
            "from": "(a) classic rows/s ÷ 3 tasks (one put's real time)" if cl_rate
            else f"1 / {ROW_SLEEP} s ((a) not measured)"}
        for n in cx.scale_tasks:
            attempt(f"f_{n}", cx.scale, n, per_task)
    # (g) autoscaling: a burst then a trickle, autoscaled against fixed maximum and minimum
    if "g" in ctx.scenarios:
        for mode in ("auto", "max", "min"):
            attempt(f"g_{mode}", cx.autoscale, mode)

    connect_figures.derive(ctx.scenarios, cx, results, res, out)
