"""The sink compatibility matrix (sink_matrix.ROWS; docs/compatibility.md): real third-party sink
connectors, unmodified, against real backends from Debian's packages, in share mode and on the
classic runtime side by side.

One run for every row at once, so the whole matrix costs one Connect cluster and one of each
fault: workers 0 and 1 (restarted with the matrix's plugins, sink_matrix's Maven-resolved
directories, on a second plugin.path entry), Mosquitto, NATS, MariaDB and an HTTP server of the
test's own, each started once. Per row a share-mode connector (4 tasks on a 1-partition topic: 4
tasks per partition) and a classic one (1 task) read the same N records: half, and once every
row is writing, worker 1 is killed with kill -9 (it runs tasks of every row: Connect spreads them
over both workers) and the other half is produced while every backend is restarted in turn.
Each row then passes when every id reached its backend from the share-mode connector (and from
the classic one; counted by distinct id: duplicates after a redelivery are allowed and
reported), the share group has no lag left, and the SinkTaskContext calls sharesink counted for
the sink's tasks are the ones its row lists. The matrix's time is recorded
(build/e2e-figures/sink-matrix.json).

The MongoDB sink (no server in Debian 12) is checked at validation: refused when it replaces
by ids from the record, accepted with generated ids.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional

import pytest

import sink_matrix
from harness.cluster import Cluster, HarnessError, Rest, default_plugin_archive
from helpers import (JSON_CONVERTER, SHARE_SINK, STRING_CONVERTER, connector_trace,
                     delete_connector, group_of, produce_rows, produce_values, record_figures,
                     settled_share_group_offsets, share_config, total_lag, uniq,
                     wait_for)

N = 2000                       # records per row, produced into the share and the classic topic
TASKS = 4                      # share-mode tasks on one partition
MATRIX_PLUGINS = ("camel-0.11", "mongodb")
RUNTIMES = ("share", "classic")


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


class NatsSubscriber(threading.Thread):
    """A core-NATS subscriber to `matrix.>` (the protocol's text form, standard library only),
    reconnecting at once after the server restarts; records payloads by subject."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.received: Dict[str, List[str]] = defaultdict(list)
        self.lock = threading.Lock()
        self.subscribed = threading.Event()
        self.stopping = False
        self.sock = None

    def run(self):
        import socket
        while not self.stopping:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            except OSError:
                time.sleep(0.05)
                continue
            try:
                self.sock.settimeout(None)
                f = self.sock.makefile("rb")
                f.readline()  # INFO
                self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                                  b"SUB matrix.> 1\r\nPING\r\n")
                while not self.stopping:
                    line = f.readline()
                    if not line:
                        break
                    if line.startswith(b"MSG "):
                        parts = line.split()
                        data = f.read(int(parts[-1]) + 2)[:-2]
                        with self.lock:
                            self.received[parts[1].decode()].append(data.decode())
                    elif line.startswith(b"PING"):
                        self.sock.sendall(b"PONG\r\n")
                    elif line.startswith(b"PONG"):
                        self.subscribed.set()
            except OSError:
                pass
            finally:
                self.subscribed.clear()
                try:
                    self.sock.close()
                except OSError:
                    pass

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(2)
        except (OSError, AttributeError):
            pass

    def values(self, subject: str) -> List[str]:
        with self.lock:
            return list(self.received.get(subject, []))


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

    def produce(self, part: slice) -> None:
        c = self.env.cluster
        ids = range(N)[part]
        for rt in RUNTIMES:
            if self.row.key == "debezium-jdbc-mariadb":
                produce_rows(c, self.topics[rt], ids)
            elif self.row.key == "camel-sql":
                produce_values(c, self.topics[rt], [json.dumps({"id": i, "v": self.values[i]})
                                                    for i in ids])
            else:
                produce_values(c, self.topics[rt], self.values[part])

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
        self.nats = NatsSubscriber(cluster.nats_port)
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
    env.nats.start()
    env.mqtt = MqttSubscriber(cluster)
    wait_for("NATS subscriber subscribed", env.nats.subscribed.is_set, timeout=30)
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
    results: Dict[str, dict] = {}
    for case in cases:
        case.prepare()
        case.produce(slice(0, N // 2))
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
        on_worker1 = {c.row.key: _tasks_on(rest, cluster, c.names["share"], 1) for c in cases}
        t_faults = time.monotonic()
        cluster.kill_worker(1)
        at_kill = {c.row.key: {rt: c.distinct(rt) for rt in RUNTIMES} for c in cases}

        # The backends restart one after the other while the second half is produced and written.
        def restart_backends():
            cluster.restart_backend("mosquitto", down_s=3)
            cluster.restart_backend("nats", down_s=3)
            backends.http.restart(down_s=3)
            cluster.restart_backend("mariadb", down_s=3)

        restarts = threading.Thread(target=restart_backends, name="matrix-restarts", daemon=True)
        restarts.start()
        for case in cases:
            case.produce(slice(N // 2, N))
        restarts.join(timeout=300)
        assert not restarts.is_alive(), "the backends' restarts did not finish"

        def complete(case: Case) -> bool:
            return all(case.distinct(rt) >= N for rt in RUNTIMES)

        deadline = time.monotonic() + 420
        while time.monotonic() < deadline and not all(complete(c) for c in cases):
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
                            "at_kill": at_kill[case.row.key][rt]}
            figs["share_tasks_on_killed_worker"] = on_worker1[case.row.key]
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
        for case in cases:
            for rt in RUNTIMES:
                delete_connector(rest, case.names[rt])


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
    assert share["distinct"] == N, f"{row.sink}: {N - share['distinct']} records lost in share mode: {figs}"
    assert share["unexpected"] == 0, figs
    assert figs["group_lag_after_stop"] == 0, f"share group lag after the run: {figs}"
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
