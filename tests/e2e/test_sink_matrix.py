"""The sink compatibility matrix (sink_matrix.ROWS; docs/compatibility.md): real third-party sink
connectors, unmodified, against real backends from Debian's packages, in share mode and on the
classic runtime side by side.

One run for every row at once, so the whole matrix costs one Connect cluster and one of each
fault: workers 0 and 1 (restarted with the matrix's plugins, sink_matrix's Maven-resolved
directories, on a second plugin.path entry), Mosquitto, NATS, MariaDB and an HTTP server of the
test's own, each started once. Per row a share-mode connector (4 tasks on a 1-partition topic: 4
tasks per partition) and a classic one (1 task) read the same N records, produced as a stream
(PacedProducer: small batches at a steady pace, never past what the run has allowed so far):
a quarter before the connectors start; once every row is writing, the rest at that pace. When
half is produced, while records are still being produced and written, worker 1 is killed with
kill -9 (it runs tasks of every row: Connect spreads them over both workers); then the backends
are restarted one after the other, each just after more records were allowed, so they are
produced and written while it is down and when it comes back; the last tenth follows the
restarts. So both faults land mid-stream for every row, and the test asserts it: each share-mode
row's count at the kill and at its backend's stop is strictly between 0 and N (at most what was
produced by then, which the allowance keeps below N; at least the N/8 every row had written
before the kill). Each row then passes when every id reached its backend from the share-mode
connector (and from the classic one; counted by distinct id: duplicates after a redelivery are
allowed and reported; a classic task that an outage failed is restarted through REST, as its
operator would, and counted), the share group has no lag left, and the SinkTaskContext calls sharesink
counted for the sink's tasks are the ones its row lists. The matrix's time is recorded
(build/e2e-figures/sink-matrix.json).

The MongoDB sink (no server in Debian 12) is checked at validation: refused when it replaces
by ids from the record, accepted with generated ids.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple

import pytest

import sink_matrix
from harness.cluster import Cluster, HarnessError, Rest, default_plugin_archive
from helpers import (JSON_CONVERTER, SHARE_SINK, STRING_CONVERTER, connector_trace,
                     delete_connector, group_of, record_figures, row_key, row_value,
                     settled_share_group_offsets, share_config, total_lag, uniq,
                     wait_for)
from hostile_records import plain_batch, produce_batch

N = 2000                       # records per row, produced into the share and the classic topic
TASKS = 4                      # share-mode tasks on one partition
MATRIX_PLUGINS = ("camel-0.11", "mongodb")
RUNTIMES = ("share", "classic")

# The stream (PacedProducer), in records per topic: produced before the connectors start; the
# count produced when worker 1 is killed and what is allowed by then; the last part, produced
# once every backend has restarted. Between the kill and that, each backend's restart allows an
# equal share of the rest just before its stop.
HEAD = N // 4
KILL_AT = N // 2
ALLOWED_AT_KILL = N * 6 // 10
TAIL = N // 10
STEP = 10                      # records per topic and batch
STEP_INTERVAL_S = 0.2          # between batches: 50 records/s per topic (pacing, not a threshold)

# Each row's backend, restarted in this order.
RESTARTS = ("mosquitto", "nats", "http", "mariadb")
BACKEND_OF = {"camel-mqtt": "mosquitto", "camel-mqtt5": "mosquitto", "camel-nats": "nats",
              "camel-http": "http", "camel-sql": "mariadb", "debezium-jdbc-mariadb": "mariadb"}
RESTART_DOWN_S = 3

Record = Tuple[Optional[bytes], bytes]


class PacedProducer(threading.Thread):
    """Produces the same count of records into every topic of `records`, STEP per topic a
    batch, a batch every STEP_INTERVAL_S, up to what `allow` has allowed so far: so the run
    decides what is still to come when it injects a fault. Raw Produce requests of plain
    batches (hostile_records), acks=all: no JVM per batch."""

    def __init__(self, bootstrap: str, records: Dict[str, List[Record]]):
        super().__init__(daemon=True, name="matrix-producer")
        self.bootstrap = bootstrap
        self.records = records
        self.total = min(len(r) for r in records.values())
        self.produced = 0       # records per topic, acknowledged by the broker
        self.allowed = 0
        self.error: Optional[BaseException] = None
        self.stopping = False
        self.cond = threading.Condition()

    def _produce(self, start: int, end: int) -> None:
        for topic, recs in self.records.items():
            produce_batch(self.bootstrap, topic, 0, plain_batch(recs[start:end]))
        with self.cond:
            self.produced = end
            self.cond.notify_all()

    def produce_now(self, upto: int, chunk: int = 250) -> None:
        """Before the thread starts: records up to `upto`, at once."""
        for start in range(self.produced, upto, chunk):
            self._produce(start, min(start + chunk, upto))
        self.allow(upto)

    def allow(self, upto: int) -> None:
        with self.cond:
            self.allowed = max(self.allowed, min(upto, self.total))
            self.cond.notify_all()

    def run(self) -> None:
        try:
            while True:
                with self.cond:
                    self.cond.wait_for(lambda: self.stopping or self.produced < self.allowed)
                    if self.stopping:
                        return
                    start, end = self.produced, min(self.produced + STEP, self.allowed)
                self._produce(start, end)
                if end >= self.total:
                    return
                time.sleep(STEP_INTERVAL_S)
        except BaseException as e:  # noqa: BLE001 - reported by check()
            self.error = e

    def check(self) -> int:
        """What is produced so far; raises what stopped the thread."""
        if self.error is not None:
            raise AssertionError(f"the matrix's producer failed: {self.error!r}") from self.error
        return self.produced

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()


# ----------------------------------------------------------------------------------------------
# what the backends received, by destination


class HttpTarget:
    """The HTTP sink's target: records each POST's body by path; restartable on its port."""

    def __init__(self, port: int):
        self.port = port
        self.received: Dict[str, List[str]] = defaultdict(list)
        self.lock = threading.Lock()
        self.server: Optional[ThreadingHTTPServer] = None
        self.thread: Optional[threading.Thread] = None

    def start(self) -> None:
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                with target.lock:
                    target.received[self.path].append(body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def restart(self, down_s: float) -> None:
        self.stop()
        time.sleep(down_s)
        self.start()

    def values(self, path: str) -> List[str]:
        with self.lock:
            return list(self.received.get(path, []))


class NatsStreamReader:
    """What reached the NATS server on `matrix.>`, read back from a JetStream stream that captures
    those subjects (file storage: it survives the server's restart).

    The sink publishes core NATS; a plain subscriber counts only what the server forwarded while
    it was subscribed, so a message the server accepted just before its stop, or just after its
    restart and before the subscriber was back, went uncounted whichever runtime sent it. The
    stream holds what the server stored; the sink's flush can still return for a message the
    server drops as it stops (the row's `restart_loss`). Standard library only: the
    protocol's text form and the JetStream API's JSON requests; messages are read once each, by
    sequence, as the stream grows."""

    STREAM = "MATRIX"

    def __init__(self, port: int):
        self.port = port
        self.received: Dict[str, List[str]] = defaultdict(list)
        self.next_seq = 1
        self.lock = threading.Lock()
        self.sock = None
        self.reader = None
        self.requests = 0

    def create_stream(self) -> None:
        with self.lock:
            reply = self._request(f"$JS.API.STREAM.CREATE.{self.STREAM}", {
                "name": self.STREAM, "subjects": ["matrix.>"], "storage": "file",
                "retention": "limits", "discard": "old", "max_msgs": -1, "max_bytes": -1})
        if "error" in reply:
            raise HarnessError(f"could not create the JetStream stream: {reply}")
        # A reused cluster's stream holds earlier runs' messages: read from what comes next.
        self.next_seq = reply.get("state", {}).get("last_seq", 0) + 1

    def values(self, subject: str) -> List[str]:
        with self.lock:
            try:
                self._read_new()
            except OSError:
                self._close()  # the server is down: what was read so far
            return list(self.received.get(subject, []))

    def stop(self) -> None:
        with self.lock:
            self._close()

    def _read_new(self) -> None:
        info = self._request(f"$JS.API.STREAM.INFO.{self.STREAM}", {})
        last = info.get("state", {}).get("last_seq", 0)
        while self.next_seq <= last:
            got = self._request(f"$JS.API.STREAM.MSG.GET.{self.STREAM}", {"seq": self.next_seq})
            msg = got.get("message")
            if msg is None and got.get("error", {}).get("code") != 404:
                raise OSError(f"stream read at {self.next_seq}: {got}")
            if msg is not None:  # 404: a sequence the stream skipped
                self.received[msg["subject"]].append(base64.b64decode(msg.get("data", "")).decode())
            self.next_seq += 1

    def _connect(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        self.reader = self.sock.makefile("rb")
        self.reader.readline()  # INFO
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                          b"SUB _INBOX.matrix.* 1\r\n")

    def _close(self) -> None:
        for closeable in (self.reader, self.sock):
            if closeable is not None:
                with contextlib.suppress(OSError):
                    closeable.close()
        self.sock = self.reader = None

    def _request(self, subject: str, body: dict) -> dict:
        if self.sock is None:
            self._connect()
        self.requests += 1
        inbox = f"_INBOX.matrix.{self.requests}"
        data = json.dumps(body).encode()
        self.sock.sendall(f"PUB {subject} {inbox} {len(data)}\r\n".encode() + data + b"\r\n")
        while True:
            line = self.reader.readline()
            if not line:
                raise OSError("the NATS server closed the connection")
            if line.startswith(b"PING"):
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise OSError(line.decode().strip())
            elif line.startswith((b"MSG ", b"HMSG ")):
                parts = line.split()
                payload = self.reader.read(int(parts[-1]) + 2)[:-2]
                if parts[0] == b"HMSG":  # headers first, then the body
                    payload = payload[int(parts[-2]):]
                if parts[1].decode() == inbox:
                    return json.loads(payload) if payload else {}


class MqttSubscriber:
    """mosquitto_sub with a persistent session (QoS 1, clean session off): what the broker
    accepted while it was away is delivered when it reconnects, after a broker restart too."""

    def __init__(self, cluster: Cluster):
        self.out = cluster.logs_dir / "matrix-mqtt-sub.out"
        # Started again whenever it exits (the broker's restart): its session is persistent.
        sub = (f"mosquitto_sub -h 127.0.0.1 -p {cluster.mosquitto_port} -q 1 -c "
               f"-i sharesink-matrix-{cluster.port_base} -t 'matrix/#' -v -k 5")
        self.proc = subprocess.Popen(["bash", "-c", f"while true; do {sub}; sleep 0.2; done"],
                                     stdout=open(self.out, "w"), stderr=subprocess.DEVNULL,
                                     start_new_session=True)

    def values(self, topic: str) -> List[str]:
        prefix = topic + " "
        return [l[len(prefix):] for l in self.out.read_text(errors="replace").splitlines()
                if l.startswith(prefix)]

    def stop(self):
        import os
        import signal
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=10)


# ----------------------------------------------------------------------------------------------
# the rows' configurations and counts


class Case:
    """One row at run time: its topics, connectors, and how to read what its backend holds."""

    def __init__(self, row: sink_matrix.Row, env: "Env"):
        self.row = row
        self.env = env
        self.base = uniq(row.key.replace("-", "_") + "_")
        self.topics = {rt: f"{self.base}_{rt}" for rt in RUNTIMES}
        self.names = {rt: f"{self.base}-{rt}" for rt in RUNTIMES}
        self.values = [f"{self.base}-{i:05d}" for i in range(N)]

    def dest(self, runtime: str) -> str:
        k, t = self.row.key, self.topics[runtime]
        return {"camel-mqtt": f"matrix/{t}", "camel-mqtt5": f"matrix/{t}",
                "camel-nats": f"matrix.{t}", "camel-http": f"/matrix/{t}"}.get(k, t)

    def sink_config(self, runtime: str) -> Dict[str, str]:
        c, k, dest = self.env.cluster, self.row.key, self.dest(runtime)
        camel = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                 # What an operator sets to ride out a backend restart on either runtime.
                 "camel.error.handler": "default",
                 "camel.error.handler.max.redeliveries": "120",
                 "camel.error.handler.redelivery.delay": "500"}
        if k == "camel-mqtt":
            camel["camel.sink.url"] = (f"paho:{dest}?brokerUrl=tcp://127.0.0.1:{c.mosquitto_port}"
                                       "&qos=1")
        elif k == "camel-mqtt5":
            camel["camel.sink.url"] = (f"paho-mqtt5:{dest}?brokerUrl=tcp://127.0.0.1:"
                                       f"{c.mosquitto_port}&qos=1")
        elif k == "camel-nats":
            camel["camel.sink.url"] = (f"nats:{dest}?servers=127.0.0.1:{c.nats_port}"
                                       "&flushConnection=true&flushTimeout=2000")
        elif k == "camel-http":
            camel["camel.sink.url"] = f"http://127.0.0.1:{c.http_target_port}{dest}?httpMethod=POST"
        elif k == "camel-sql":
            db = c.mariadb_info()
            camel.update({
                "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "false",
                "camel.sink.url": f"sql:INSERT INTO {dest} (id, v) VALUES (:#id, :#v)"
                                  "?dataSource=#matrixds",
                "camel.beans.matrixds": "#class:org.mariadb.jdbc.MariaDbDataSource",
                "camel.beans.matrixds.url": f"{db['jdbc_url']}?user={db['user']}"
                                            f"&password={db['password']}&connectTimeout=2000"})
        elif k == "debezium-jdbc-mariadb":
            db = c.mariadb_info()
            return {"connection.url": db["jdbc_url"], "connection.username": db["user"],
                    "connection.password": db["password"], "insert.mode": "insert",
                    "primary.key.mode": "none", "schema.evolution": "basic",
                    "table.name.format": dest, "batch.size": "200",
                    "flush.max.retries": "100", "flush.retry.delay.ms": "500",
                    "key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
                    "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}
        else:
            raise AssertionError(f"no configuration for row {k}")
        return camel

    def prepare(self) -> None:
        c = self.env.cluster
        for rt in RUNTIMES:
            c.create_topic(self.topics[rt], partitions=1)
            if self.row.key == "camel-sql":
                c.mariadb_sql(f"CREATE TABLE {self.dest(rt)} (id BIGINT NOT NULL, v VARCHAR(64))")

    def records(self) -> List[Record]:
        """The N records of either topic, as (key, value): id i is the i-th."""
        if self.row.key == "debezium-jdbc-mariadb":
            return [(row_key(i).encode(), row_value(i).encode()) for i in range(N)]
        if self.row.key == "camel-sql":
            return [(None, json.dumps({"id": i, "v": self.values[i]}).encode()) for i in range(N)]
        return [(None, v.encode()) for v in self.values]

    def connector_configs(self) -> Dict[str, Dict[str, str]]:
        share = share_config(self.env.cluster, self.names["share"], self.topics["share"],
                             self.row.connector_class, TASKS)
        share.update(self.sink_config("share"))
        classic = {"name": self.names["classic"], "connector.class": self.row.connector_class,
                   "topics": self.topics["classic"], "tasks.max": "1",
                   **self.sink_config("classic")}
        return {"share": share, "classic": classic}

    def delivered(self, runtime: str) -> List[str]:
        """The ids (as produced values) at the backend from `runtime`'s connector, repeats kept."""
        c, k, dest = self.env.cluster, self.row.key, self.dest(runtime)
        if k in ("camel-mqtt", "camel-mqtt5"):
            return self.env.mqtt.values(dest)
        if k == "camel-nats":
            return self.env.nats.values(dest)
        if k == "camel-http":
            return self.env.http.values(dest)
        if k == "camel-sql":
            col = "v"
        else:
            col = "id"
        if not c.is_running("mariadb"):
            return []
        out = c.mariadb_sql(f"SELECT {col} FROM {dest}", check=False)
        if "ERROR" in out:
            return []
        rows = [l.strip() for l in out.splitlines() if l.strip()]
        return rows if col == "v" else [self.values[int(i)] for i in rows]

    def distinct(self, runtime: str) -> int:
        return len(set(self.delivered(runtime)) & set(self.values))


class Env:
    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.http = HttpTarget(cluster.http_target_port)
        self.nats = NatsStreamReader(cluster.nats_port)
        self.mqtt: Optional[MqttSubscriber] = None


# ----------------------------------------------------------------------------------------------
# the run


def _context_calls(cluster: Cluster, name: str) -> Dict[str, int]:
    """Sums of the SinkTaskContext calls the stopped share-mode tasks of `name` reported, and 1
    for each method a task's first-call line names (tasks killed with their worker report only
    those), from both workers' logs."""
    calls: Dict[str, int] = defaultdict(int)
    rx_stop = re.compile(rf"{re.escape(name)}-\d+: stopped; .*SinkTaskContext calls \{{(.*)\}}")
    rx_first = re.compile(rf"{re.escape(name)}-\d+: the sink task called SinkTaskContext\.(\S+) ")
    for i in (0, 1):
        p = cluster.logs_dir / f"worker-{i}.log"
        text = p.read_text(errors="replace") if p.exists() else ""
        for m in rx_stop.finditer(text):
            for item in m.group(1).split(", "):
                method, _, n = item.partition("=")
                calls[method] += int(n)
        for m in rx_first.finditer(text):
            calls[m.group(1)] = max(calls[m.group(1)], 1)
    return dict(calls)


@pytest.fixture(scope="module")
def matrix_workers(cluster: Cluster, worker: Rest):
    """Workers 0 and 1 with the matrix's plugins; worker 0 comes back as the session had it."""
    archive = default_plugin_archive()
    cluster.stop_worker(0)
    try:
        cluster.start_worker(0, plugin_archive=archive, extra_plugins=MATRIX_PLUGINS)
        cluster.start_worker(1, plugin_archive=archive, extra_plugins=MATRIX_PLUGINS)
        yield worker
    finally:
        for i in (1, 0):
            if cluster.is_running(f"worker-{i}"):
                cluster.stop_worker(i)
        cluster.start_worker(0, plugin_archive=archive)


@pytest.fixture(scope="module")
def backends(cluster: Cluster):
    env = Env(cluster)
    try:
        cluster.start_mosquitto()
        cluster.start_nats()
        cluster.start_mariadb()
    except HarnessError as e:
        pytest.fail(f"could not start the matrix's backends: {e}", pytrace=False)
    env.http.start()
    env.nats.create_stream()
    env.mqtt = MqttSubscriber(cluster)
    yield env
    env.nats.stop()
    env.mqtt.stop()
    env.http.stop()
    for stop in (cluster.stop_mosquitto, cluster.stop_nats, cluster.stop_mariadb):
        stop()


@pytest.fixture(scope="module")
def matrix(cluster: Cluster, matrix_workers: Rest, backends: Env):
    """Runs every row at once; returns {row key: figures}."""
    rest = matrix_workers
    t0 = time.monotonic()
    cases = [Case(r, backends) for r in sink_matrix.rows_to_run()]
    assert all(BACKEND_OF.get(c.row.key) in RESTARTS for c in cases), \
        f"a row without a backend to restart: {[c.row.key for c in cases]} vs {BACKEND_OF}"
    results: Dict[str, dict] = {}
    for case in cases:
        case.prepare()
    producer = PacedProducer(cluster.bootstrap, {case.topics[rt]: case.records()
                                                 for case in cases for rt in RUNTIMES})
    producer.produce_now(HEAD)
    try:
        for case in cases:
            for rt, cfg in case.connector_configs().items():
                rest.put_connector(case.names[rt], cfg)
        for case in cases:
            for rt in RUNTIMES:
                try:
                    rest.wait_connector_running(case.names[rt], tasks=TASKS if rt == "share" else 1,
                                                timeout=240)
                except HarnessError as e:
                    results.setdefault(case.row.key, {})[f"{rt}_start_failure"] = str(e)[:3000]

        def started(case: Case) -> bool:
            return all(case.distinct(rt) >= N // 8 for rt in RUNTIMES)

        # A row that never writes fails on its own below; the others go on.
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not all(
                started(c) for c in cases if not results.get(c.row.key)):
            time.sleep(1)

        # The stream: the kill when half is produced, while more is still allowed to come.
        producer.allow(ALLOWED_AT_KILL)
        producer.start()
        wait_for(f"{KILL_AT} records per topic produced", lambda: producer.check() >= KILL_AT,
                 timeout=120)
        on_worker1 = {c.row.key: _tasks_on(rest, cluster, c.names["share"], 1) for c in cases}
        t_faults = time.monotonic()
        cluster.kill_worker(1)
        produced_at_kill = producer.check()
        at_kill = {c.row.key: {rt: c.distinct(rt) for rt in RUNTIMES} for c in cases}

        # The backends restart one after the other, each just after more records were allowed:
        # they are produced while it is down and written when it is back.
        at_restart: Dict[str, dict] = {}
        allowed = ALLOWED_AT_KILL
        for backend in RESTARTS:
            allowed += (N - TAIL - ALLOWED_AT_KILL) // len(RESTARTS)
            producer.allow(allowed)
            for c in cases:
                if BACKEND_OF[c.row.key] == backend:
                    at_restart[c.row.key] = {"produced": producer.check(),
                                             **{rt: c.distinct(rt) for rt in RUNTIMES}}
            if backend == "http":
                backends.http.restart(down_s=RESTART_DOWN_S)
            else:
                cluster.restart_backend(backend, down_s=RESTART_DOWN_S)
            for c in cases:
                if BACKEND_OF[c.row.key] == backend:
                    at_restart[c.row.key]["produced_after"] = producer.check()
        producer.allow(N)
        producer.join(timeout=300)
        assert producer.check() == N and not producer.is_alive(), \
            f"the producer stopped at {producer.produced} of {N} records per topic"

        def complete(case: Case) -> bool:
            if case.row.restart_loss:
                # Everything but what its restart may have lost; the tail, produced after every
                # restart, is among it, so the window's own retries have had their time.
                at = at_restart[case.row.key]
                window = restart_window(at["produced"], at["produced_after"])
                return all(i in window for rt in RUNTIMES
                           for i in missing_indices(case.values, case.delivered(rt)))
            return all(case.distinct(rt) >= N for rt in RUNTIMES)

        # A classic task that a backend outage failed stays FAILED "until manually restarted"
        # (WorkerSinkTask); its operator restarts it through REST, and so does the test, counting
        # it. sharesink restarts a legacy task that threw in place, so its rows need none.
        classic_restarts: Dict[str, int] = defaultdict(int)

        def restart_failed_classic(case: Case) -> None:
            name = case.names["classic"]
            status = rest.get(f"/connectors/{name}/status", check=False) or {}
            if any(t.get("state") == "FAILED" for t in status.get("tasks", [])):
                rest.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true",
                          check=False)
                classic_restarts[case.row.key] += 1

        deadline = time.monotonic() + 420
        while time.monotonic() < deadline and not all(complete(c) for c in cases):
            for case in cases:
                if case.distinct("classic") < N:
                    restart_failed_classic(case)
            time.sleep(2)
        complete_s = time.monotonic() - t_faults
        for case in cases:
            traces = connector_trace(rest, case.names["share"])
            for rt in RUNTIMES:
                delete_connector(rest, case.names[rt])
            offs = settled_share_group_offsets(cluster, group_of(case.names["share"]))
            figs = results.setdefault(case.row.key, {})
            for rt in RUNTIMES:
                got = case.delivered(rt)
                figs[rt] = {"produced": N, "delivered": len(got),
                            "distinct": len(set(got) & set(case.values)),
                            "unexpected": len(set(got) - set(case.values)),
                            "missing": missing_indices(case.values, got),
                            "at_kill": at_kill[case.row.key][rt],
                            "at_backend_stop": at_restart[case.row.key][rt]}
            figs["produced_at_kill"] = produced_at_kill
            figs["backend"] = BACKEND_OF[case.row.key]
            figs["produced_at_backend_stop"] = at_restart[case.row.key]["produced"]
            figs["produced_after_backend_restart"] = at_restart[case.row.key]["produced_after"]
            figs["share_tasks_on_killed_worker"] = on_worker1[case.row.key]
            figs["classic_failed_task_restarts_by_rest"] = classic_restarts[case.row.key]
            figs["group_lag_after_stop"] = total_lag(offs)
            figs["share_status_at_end"] = traces[:2000]
        time.sleep(2)  # the stopped tasks' last lines reach the log
        for case in cases:
            results[case.row.key]["context_calls"] = _context_calls(cluster, case.names["share"])
        record_figures("sink-matrix", records_per_row=N, share_tasks=TASKS,
                       seconds_total=round(time.monotonic() - t0, 1),
                       seconds_from_faults_to_complete=round(complete_s, 1), rows=results)
        yield results
    finally:
        producer.stop()
        for case in cases:
            for rt in RUNTIMES:
                delete_connector(rest, case.names[rt])


def missing_indices(values: List[str], got: List[str]) -> List[int]:
    """The positions in the produced order of the values not among `got`."""
    seen = set(got)
    return [i for i, v in enumerate(values) if v not in seen]


def restart_window(produced_at_stop: int, produced_after_restart: int) -> range:
    """The records produced around the backend's restart: from the batch before its stop (it may
    still be on its way) to the last one produced by the time it was back."""
    return range(max(0, produced_at_stop - STEP), produced_after_restart)


def _tasks_on(rest: Rest, cluster: Cluster, name: str, index: int) -> int:
    st = rest.connector_status(name)
    return sum(1 for t in st.get("tasks", [])
               if t.get("worker_id", "").endswith(f":{cluster.worker_port(index)}"))


@pytest.mark.parametrize("key", [r.key for r in sink_matrix.rows_to_run()])
def test_row(matrix: Dict[str, dict], key: str):
    figs = matrix[key]
    row = sink_matrix.by_key()[key]
    for rt in RUNTIMES:
        assert f"{rt}_start_failure" not in figs, figs[f"{rt}_start_failure"]
    share, classic = figs["share"], figs["classic"]
    # The faults landed mid-stream: some of the row's records written, not all (at most what
    # was produced by then, which the run's allowance keeps below N).
    assert figs["produced_at_kill"] < N and figs["produced_at_backend_stop"] < N, figs
    assert 0 < share["at_kill"] < N, \
        f"{row.sink}: the worker kill did not land mid-stream ({share['at_kill']} of {N}): {figs}"
    assert 0 < share["at_backend_stop"] < N, \
        f"{row.sink}: its backend's restart did not land mid-stream " \
        f"({share['at_backend_stop']} of {N}): {figs}"
    assert share["unexpected"] == 0, figs
    assert figs["group_lag_after_stop"] == 0, f"share group lag after the run: {figs}"
    if row.restart_loss:
        # The sink's own limit (sink_matrix.Row.restart_loss): records may be missing, under
        # either runtime, only among those written as its backend stopped and started.
        window = restart_window(figs["produced_at_backend_stop"],
                                figs["produced_after_backend_restart"])
        for rt, r in (("share mode", share), ("the classic runtime", classic)):
            outside = [i for i in r["missing"] if i not in window]
            assert not outside, \
                f"{row.sink}: {N - r['distinct']} records lost in {rt}, {outside[:20]} of them " \
                f"outside the backend's restart {window}: {figs}"
    else:
        assert share["distinct"] == N, \
            f"{row.sink}: {N - share['distinct']} records lost in share mode: {figs}"
        assert classic["distinct"] == N, f"{row.sink}: the classic runtime lost records: {figs}"
    called = {m for m, n in figs["context_calls"].items() if n > 0}
    assert called == set(row.context_calls), \
        f"{row.sink} called {figs['context_calls']}; its row says {row.context_calls}"


# ----------------------------------------------------------------------------------------------
# validation-level: sinks whose backend Debian does not have


def _share_validation(rest: Rest, sink_class: str, **settings: str) -> Dict[str, List[str]]:
    cfg = {"name": "matrix-validate", "share.sink.connector.class": sink_class,
           "topics": "matrix-validate", "tasks.max": "4"}
    cfg.update(settings)
    return Rest.validation_errors(rest.validate(SHARE_SINK, cfg))


def test_mongodb_sink_is_refused_when_it_replaces_by_ids_from_the_record(matrix_workers: Rest):
    rest = matrix_workers
    # No server: the sink's own validation may report connection.uri; only the order check counts.
    base = {"connection.uri": "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500",
            "database": "db", "collection": "c"}
    order_keys = {"document.id.strategy", "delete.on.null.values", "change.data.capture.handler",
                  "writemodel.strategy", "share.ordering", "share.sink.connector.class"}

    def order_errors(**settings):
        errors = _share_validation(rest, sink_matrix.MONGODB_SINK, **base, **settings)
        return {k: v for k, v in errors.items() if k in order_keys}

    assert order_errors() == {}, "generated ids (the default): one new document per record"
    by_key = "com.mongodb.kafka.connect.sink.processor.id.strategy.ProvidedInKeyStrategy"
    # The sink itself accepts deletes only with ids from the key.
    for key, value, more in (
            ("document.id.strategy", by_key, {}),
            ("delete.on.null.values", "true", {"document.id.strategy": by_key}),
            ("change.data.capture.handler",
             "com.mongodb.kafka.connect.sink.cdc.debezium.mongodb.MongoDbChangeStreamHandler", {})):
        errors = order_errors(**{key: value}, **more)
        assert any("share.ordering" in m for m in errors.get(key, [])), f"{key}={value}: {errors}"
        lifted = order_errors(**{key: value, "share.ordering": "unordered"}, **more)
        assert not any("share.ordering" in m for ms in lifted.values() for m in ms), \
            f"{key}={value} with share.ordering=unordered: {lifted}"
