"""Tests of the local cluster harness itself: the broker really has share groups at
share.version 2, a share group really delivers, the worker loads third-party plugins from
their own plugin directories, PostgreSQL takes password logins and keeps data across a stop."""

from __future__ import annotations

import os
import subprocess
import time
import uuid

import pytest

from harness.cluster import Cluster, HarnessError
from harness.waits import Budget


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_share_version_is_at_least_2(cluster: Cluster):
    features = cluster.features()
    assert "share.version" in features, f"no share.version feature in {features}"
    assert isinstance(features["share.version"], int) and features["share.version"] >= 2, features
    assert str(features["metadata.version"]).startswith("4.4"), features


def test_broker_single_node_share_settings(cluster: Cluster):
    broker = cluster.describe_configs("brokers", "1")
    assert broker["share.coordinator.state.topic.replication.factor"] == "1"
    assert broker["share.coordinator.state.topic.min.isr"] == "1"
    assert broker["group.initial.rebalance.delay.ms"] == "0"


def test_share_group_consumes_everything_produced(cluster: Cluster):
    topic, group = _name("harness-share"), _name("harness-share-g")
    n = 3000
    cluster.create_topic(topic, partitions=3)
    assert cluster.produce(topic, n) == n
    cluster.set_group_config(group, {"share.auto.offset.reset": "earliest"})
    assert cluster.describe_configs("groups", group)["share.auto.offset.reset"] == "earliest"
    res = cluster.share_consume(topic, group, n, timeout_ms=30000)
    assert res["records"] == n, res["stdout"]


def test_share_group_default_reset_is_latest(cluster: Cluster):
    """Without share.auto.offset.reset=earliest a new share group skips existing records."""
    topic = _name("harness-latest")
    cluster.create_topic(topic, partitions=1)
    cluster.produce(topic, [f"v{i}" for i in range(10)])
    # The tool prints no count when it fails before its end (seen once in CI, at the session's
    # start): that run says nothing, so a fresh group tries again.
    for attempt in range(2):
        group = _name("harness-latest-g")
        res = cluster.share_consume(topic, group, 10, timeout_ms=4000, check=False)
        if res["records"] is not None:
            break
    assert res["records"] == 0, (res["stdout"], res["stderr"][-2000:])


def test_produce_given_records_keys_headers(cluster: Cluster):
    topic = _name("harness-produce")
    cluster.create_topic(topic)
    values = ["a", "b b", None, '{"x": 1}']
    keys = ["k1", None, "k3", "k4"]
    headers = [{"h": "1"}, None, {"h": "3", "g": "x"}, {}]
    assert cluster.produce(topic, values, keys=keys, headers=headers) == 4
    got = cluster.consume(topic, 4, print_key=True, print_headers=True)
    assert got == ["h:1\tk1\ta", "NO_HEADERS\tnull\tb b", "h:3,g:x\tk3\tnull",
                   'NO_HEADERS\tk4\t{"x": 1}'], got


def test_produce_fails_when_a_record_is_not_sent(cluster: Cluster):
    """The console producer logs a record the broker refused and still exits 0; produce() must
    not count such a record as in the log (a fault test would then call it lost)."""
    topic = _name("harness-refused")
    cluster.create_topic(topic, partitions=1)
    with pytest.raises(HarnessError, match="could not send 1 of 2 records"):
        cluster.produce(topic, ["small", "x" * 2000], producer_props={"max.request.size": 1000})


def test_produce_refused_by_the_broker_raises(cluster: Cluster):
    """The wire producer (harness/kafka_wire.py) raises on a batch the broker refuses, here one
    over the topic's max.message.bytes (MESSAGE_TOO_LARGE), instead of counting it produced."""
    topic = _name("harness-too-large")
    cluster.create_topic(topic, partitions=1, config={"max.message.bytes": 1000})
    with pytest.raises(HarnessError, match="error code 10"):
        cluster.produce(topic, ["x" * 2000])
    assert cluster.end_offsets(topic) == {0: 0}


def test_keys_land_where_kafkas_producer_puts_them(cluster: Cluster):
    """The same keyed records through Kafka's console producer (any producer_props take that
    path) and through the wire land on the same partitions: tests that rely on one key staying
    in one partition see what a Kafka producer does."""
    keys = [f"key-{i}" for i in range(200)]
    counts = []
    for props in ({"linger.ms": 5}, None):
        topic = _name("harness-keys")
        cluster.create_topic(topic, partitions=4)
        cluster.produce(topic, [f"v-{k}" for k in keys], keys=keys, producer_props=props)
        counts.append(cluster.end_offsets(topic))
    assert counts[0] == counts[1], counts
    assert sum(counts[1].values()) == 200 and len(counts[1]) == 4, counts


def test_worker_loads_filestream_sink_from_own_plugin_dir(cluster: Cluster, worker):
    plugins = {p["class"]: p for p in worker.plugins()}
    assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in plugins, plugins
    assert plugins["org.apache.kafka.connect.file.FileStreamSinkConnector"]["type"] == "sink"
    assert "io.debezium.connector.jdbc.JdbcSinkConnector" in plugins, plugins
    # not on the worker's own classpath ...
    assert not list(cluster.kafka_lib.glob("connect-file-*.jar"))
    # ... but registered from its own plugin directory
    log = cluster.current_log("worker-0")
    plugin_dir = cluster.state_dir / "plugins" / "connect-file"
    assert f"Registered loader: PluginClassLoader{{pluginLocation=file:{plugin_dir}/}}" in log


def test_filestream_sink_runs(cluster: Cluster, worker, tmp_path):
    topic, name = _name("harness-fs"), _name("harness-fs-conn")
    out = tmp_path / "out.txt"
    cluster.create_topic(topic, partitions=2)
    cluster.produce(topic, [f"line-{i}" for i in range(200)])
    worker.put_connector(name, {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "topics": topic, "file": str(out), "tasks.max": 1,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    })
    try:
        worker.wait_connector_running(name, tasks=1, timeout=60)
        budget = Budget(60)
        lines = []
        while not budget.spent():
            lines = out.read_text().splitlines() if out.exists() else []
            if len(lines) >= 200:
                break
            time.sleep(0.5)
        assert sorted(lines) == sorted(f"line-{i}" for i in range(200))
    finally:
        worker.delete_connector(name)


def test_postgres_password_login_and_restart_keeps_data(cluster: Cluster, postgres):
    psql = str(cluster.pg.bindir() / "psql")
    env = dict(os.environ, PGPASSWORD=postgres["password"])

    def sql(q: str) -> str:
        p = subprocess.run([psql, "-X", "-At", "-h", postgres["host"], "-p", str(postgres["port"]),
                            "-U", postgres["user"], "-d", postgres["db"], "-c", q],
                           env=env, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    table = _name("t").replace("-", "_")
    sql(f"CREATE TABLE {table} (id int primary key)")
    sql(f"INSERT INTO {table} VALUES (1), (2)")
    cluster.pg_stop_for(1)
    assert sql(f"SELECT count(*) FROM {table}") == "2"
    bad = subprocess.run([psql, "-X", "-h", postgres["host"], "-p", str(postgres["port"]),
                          "-U", postgres["user"], "-d", postgres["db"], "-c", "select 1"],
                         env=dict(os.environ, PGPASSWORD="wrong"), capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode != 0 and "password authentication failed" in bad.stderr


def test_sasl_ssl_listener_scram_512_and_256(cluster: Cluster):
    assert cluster.sasl_ssl and cluster.ca_pem.is_file() and cluster.truststore_jks.is_file()
    topic = _name("harness-sasl")
    cfg512 = cluster.sasl_ssl_client_properties_file("SCRAM-SHA-512")
    cfg256 = cluster.sasl_ssl_client_properties_file("SCRAM-SHA-256")
    from harness.cluster import CONSOLE_PRODUCER, TOPIC_COMMAND
    cluster.run_tool(TOPIC_COMMAND, "--bootstrap-server", cluster.sasl_ssl_bootstrap,
                     "--command-config", cfg512, "--create", "--topic", topic)
    cluster.run_tool(CONSOLE_PRODUCER, "--bootstrap-server", cluster.sasl_ssl_bootstrap,
                     "--command-config", cfg256, "--topic", topic, input="x\ny\nz\n")
    assert cluster.consume(topic, 3) == ["x", "y", "z"]
    bad = cluster.tls_dir / "client-bad.properties"
    bad.write_text(cfg512.read_text().replace(cluster.scram_password, "wrong-secret"))
    res = cluster.run_tool(TOPIC_COMMAND, "--bootstrap-server", cluster.sasl_ssl_bootstrap,
                           "--command-config", bad, "--list", check=False, timeout=90)
    assert res.returncode != 0
    assert "invalid credentials" in res.stdout + res.stderr
