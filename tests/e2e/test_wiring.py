"""Wiring smoke test: ShareSinkConnector drives Kafka's FileStream sink from a share group in a real
Connect 4.4 worker, with settings taken from the worker's configuration file.

- 1000 keyed records on 3 partitions, tasks.max=4 (more tasks than partitions): every record is
  in the sink's file, checked by content; the connector shows as a source with 4 RUNNING tasks.
- The connector sets no bootstrap servers: they come from the worker file on its command line.
- The group config share.auto.offset.reset=earliest was set by the connector before the tasks
  joined (the records were produced before the connector existed).
- Log lines of the task carry the worker's connector context.
- Delete ends the share sessions: the group has no members shortly after.
- Validation through REST: a commit interval too close to the lock and a non-sink class are
  errors on the right keys; the legacy connector's own keys are in the answer.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid

import pytest

from harness.cluster import SHARE_GROUP_COMMAND, Cluster, Rest, RestError
from helpers import FILE_SINK, SHARE_SINK, connector_trace, wait_for, worker_log
from helpers import STRING_CONVERTER as STRING


def _group_members(cluster: Cluster, group: str) -> int:
    out = cluster.run_tool(SHARE_GROUP_COMMAND, "--bootstrap-server", cluster.bootstrap,
                           "--describe", "--group", group, "--members", check=False).stdout
    # One line per member after the header; "has no active members" otherwise.
    rows = [l for l in out.splitlines() if l.strip() and not l.startswith("GROUP")
            and "no active members" not in l]
    return len(rows)


@pytest.mark.parametrize("engine", ["native", "java"])
def test_file_sink_through_share_group(cluster: Cluster, worker: Rest, engine: str):
    suffix = uuid.uuid4().hex[:8]
    topic = f"wiring-{engine}-{suffix}"
    name = f"wiring-{engine}-{suffix}"
    group = f"connect-share-{name}"
    out_file = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    values = [f"record-{i:04d}" for i in range(1000)]
    cluster.produce(topic, values, keys=[f"k{i}" for i in range(1000)])
    log_before = len(worker_log(cluster))

    worker.put_connector(name, {
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": FILE_SINK,
        "share.engine": engine,
        "share.commit.interval.ms": 1000,
        "topics": topic,
        "tasks.max": 4,
        "file": str(out_file),
        "key.converter": STRING,
        "value.converter": STRING,
    })
    try:
        status = worker.wait_connector_running(name, tasks=4, timeout=120)
        assert status["type"] == "source"

        def all_lines():
            if not out_file.exists():
                return None
            lines = out_file.read_text().splitlines()
            return lines if len(set(lines)) >= len(values) else None

        lines = wait_for(f"{len(values)} records in {out_file}", all_lines, timeout=90)
        assert set(lines) == set(values)
        duplicates = len(lines) - len(set(lines))
        print(f"\n{engine}: {len(values)} produced, {len(set(lines))} delivered, "
              f"{duplicates} duplicates")

        configs = cluster.describe_configs("groups", group)
        assert configs.get("share.auto.offset.reset") == "earliest", configs

        log = worker_log(cluster)[log_before:]
        # Task lines carry the connector context the worker puts in the MDC: "[name|task-N] ".
        task_lines = re.findall(rf"\[{re.escape(name)}\|task-\d\] .*runs on share group {group}",
                                log)
        assert len(task_lines) == 4, log[-3000:]
        assert _group_members(cluster, group) == 4
    finally:
        worker.delete_connector(name)
    # Stop closes the sessions and leaves the group: no member waits for a session timeout.
    wait_for(f"{group} without members", lambda: _group_members(cluster, group) == 0,
              timeout=20)
    log = worker_log(cluster)[log_before:]
    assert len(re.findall(rf"\[{re.escape(name)}\|task-\d\] .*share member stopped", log)) == 4


def test_validation_reports_on_the_right_keys(cluster: Cluster, worker: Rest):
    base = {
        "connector.class": SHARE_SINK,
        "name": "wiring-validate",
        "share.sink.connector.class": FILE_SINK,
        "topics": "wiring-validate",
        "file": "/tmp/never-written.out",
    }
    result = worker.validate("ShareSinkConnector", base)
    assert Rest.validation_errors(result) == {}, result
    names = {c["value"]["name"] for c in result["configs"]}
    assert "file" in names, "the legacy connector's keys are part of the answer"

    errors = Rest.validation_errors(worker.validate("ShareSinkConnector", dict(
        base, **{"share.commit.interval.ms": 20000})))
    assert "share.commit.interval.ms" in errors, errors
    print(f"\ncommit interval: {errors['share.commit.interval.ms']}")

    errors = Rest.validation_errors(worker.validate("ShareSinkConnector", dict(
        base, **{"share.sink.connector.class":
                 "org.apache.kafka.connect.file.FileStreamSourceConnector"})))
    assert "not a SinkConnector" in " ".join(errors["share.sink.connector.class"]), errors

    errors = Rest.validation_errors(worker.validate("ShareSinkConnector", dict(
        base, **{"share.dlq.mode": "broker",
                 "errors.deadletterqueue.topic.name": "orders-dlq"})))
    assert "dlq." in " ".join(errors["errors.deadletterqueue.topic.name"]), errors


def _connector_lines(path) -> list:
    return path.read_text().splitlines() if path.exists() else []


def test_pause_resume_restart_and_stop(cluster: Cluster, worker: Rest):
    """PAUSE stops writes within a cycle, RESUME continues, a restart with tasks and a STOP then
    resume lose nothing: every record is in the file at the end."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"wiring-life-{suffix}"
    name = f"wiring-life-{suffix}"
    group = f"connect-share-{name}"
    out_file = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    worker.put_connector(name, {
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": FILE_SINK,
        "share.commit.interval.ms": 500,
        "topics": topic,
        "tasks.max": 2,
        "file": str(out_file),
        "key.converter": STRING,
        "value.converter": STRING,
    })
    produced = []

    def produce(n):
        batch = [f"life-{len(produced) + i:04d}" for i in range(n)]
        cluster.produce(topic, batch, keys=[f"k{len(produced) + i}" for i in range(n)])
        produced.extend(batch)

    def has_all():
        return set(_connector_lines(out_file)) >= set(produced)

    try:
        worker.wait_connector_running(name, tasks=2, timeout=120)
        produce(200)
        wait_for("first 200 records", has_all, timeout=60)

        worker.put(f"/connectors/{name}/pause")
        wait_for("PAUSED", lambda: worker.connector_status(name)["connector"]["state"] == "PAUSED")
        time.sleep(3)  # a cycle in progress finishes
        before = len(_connector_lines(out_file))
        produce(200)
        time.sleep(5)
        assert len(_connector_lines(out_file)) == before, "a paused connector wrote records"
        worker.put(f"/connectors/{name}/resume")
        wait_for("records produced while paused", has_all, timeout=60)

        worker.post(f"/connectors/{name}/restart?includeTasks=true")
        worker.wait_connector_running(name, tasks=2, timeout=120)
        produce(200)
        wait_for("records after the restart", has_all, timeout=60)

        worker.put(f"/connectors/{name}/stop")
        wait_for("STOPPED", lambda: worker.connector_status(name)["connector"]["state"] == "STOPPED")
        wait_for(f"{group} without members after STOP",
                  lambda: _group_members(cluster, group) == 0, timeout=20)
        produce(200)
        worker.put(f"/connectors/{name}/resume")
        worker.wait_connector_running(name, tasks=2, timeout=120)
        wait_for("records produced while stopped", has_all, timeout=60)
        lines = _connector_lines(out_file)
        print(f"\nlifecycle: {len(produced)} produced, {len(set(lines))} delivered, "
              f"{len(lines) - len(set(lines))} duplicates")
        assert set(lines) == set(produced)
    finally:
        worker.delete_connector(name)


def test_migration_from_the_classic_runtime(cluster: Cluster, worker: Rest):
    """A classic FileStream sink connector consumes the first half, is deleted, and a sharesink
    connector of the same name starts where the classic group stopped: the second file holds
    exactly the second half."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"wiring-migrate-{suffix}"
    name = f"wiring-migrate-{suffix}"
    classic_file = cluster.state_dir / f"{name}.classic.out"
    share_file = cluster.state_dir / f"{name}.share.out"
    cluster.create_topic(topic, partitions=3)
    first = [f"first-{i:04d}" for i in range(300)]
    second = [f"second-{i:04d}" for i in range(300)]
    cluster.produce(topic, first, keys=[f"k{i}" for i in range(300)])
    common = {"topics": topic, "tasks.max": 2, "key.converter": STRING,
              "value.converter": STRING}
    worker.put_connector(name, dict(common, **{"connector.class": FILE_SINK,
                                               "file": str(classic_file)}))
    try:
        worker.wait_connector_running(name, tasks=2, timeout=120)
        wait_for("the classic connector's first half",
                  lambda: set(_connector_lines(classic_file)) >= set(first), timeout=60)
    finally:
        worker.delete_connector(name)  # its tasks commit their offsets when they close

    def committed():
        out = cluster.run_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                               "--bootstrap-server", cluster.bootstrap, "--describe",
                               "--group", f"connect-{name}", check=False).stdout
        lags = [l.split() for l in out.splitlines() if l.startswith(f"connect-{name} ")]
        return len(lags) == 3 and all(row[5] == "0" for row in lags)  # LAG column

    wait_for("the classic group's commits", committed, timeout=60)
    cluster.produce(topic, second, keys=[f"k{i}" for i in range(300)])
    worker.put_connector(name, dict(common, **{"connector.class": SHARE_SINK,
                                               "share.sink.connector.class": FILE_SINK,
                                               "file": str(share_file)}))
    try:
        worker.wait_connector_running(name, tasks=2, timeout=120)
        wait_for("the second half through the share group",
                  lambda: set(_connector_lines(share_file)) >= set(second), timeout=60)
        time.sleep(3)  # anything replayed from the first half would show up by now
        lines = _connector_lines(share_file)
        replayed = [l for l in lines if l.startswith("first-")]
        print(f"\nmigration: {len(second)} new records, {len(set(lines))} delivered by share "
              f"mode, {len(replayed)} replayed from before the migration")
        assert replayed == []
        assert set(lines) == set(second)
    finally:
        worker.delete_connector(name)


# A tiny JMX client: prints "<mbean> <attribute>=<value>" for every attribute of the MBeans that
# match the pattern, read through the worker's JMX port with plain javax.management.remote.
JMX_QUERY = r"""
import javax.management.*;
import javax.management.remote.*;
public class JmxQuery {
  public static void main(String[] a) throws Exception {
    try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(a[0]))) {
      MBeanServerConnection s = c.getMBeanServerConnection();
      for (ObjectName n : s.queryNames(new ObjectName(a[1]), null)) {
        for (MBeanAttributeInfo i : s.getMBeanInfo(n).getAttributes()) {
          System.out.println(n + " " + i.getName() + "=" + s.getAttribute(n, i.getName()));
        }
      }
    }
  }
}
"""

AUX_WORKER = {
    "group.id": "sharesink-wiring-aux",
    "config.storage.topic": "connect-wiring-aux-configs",
    "offset.storage.topic": "connect-wiring-aux-offsets",
    "status.storage.topic": "connect-wiring-aux-status",
}


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_metrics_are_in_the_workers_jmx(cluster: Cluster, worker: Rest, tmp_path):
    import shutil
    import subprocess
    port = _free_port()
    jmx = [f"-Dcom.sun.management.jmxremote.port={port}",
           f"-Dcom.sun.management.jmxremote.rmi.port={port}",
           "-Dcom.sun.management.jmxremote.host=127.0.0.1",
           "-Djava.rmi.server.hostname=127.0.0.1",
           "-Dcom.sun.management.jmxremote.authenticate=false",
           "-Dcom.sun.management.jmxremote.ssl=false"]
    suffix = uuid.uuid4().hex[:8]
    topic = f"wiring-jmx-{suffix}"
    name = f"wiring-jmx-{suffix}"
    out_file = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    values = [f"jmx-{i:04d}" for i in range(300)]
    cluster.produce(topic, values, keys=[f"k{i}" for i in range(300)])
    source = tmp_path / "JmxQuery.java"
    source.write_text(JMX_QUERY)
    java = shutil.which("java") or "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
    cluster.start_worker(1, extra=AUX_WORKER, jvm_opts=jmx)
    try:
        rest = cluster.rest(1)
        rest.put_connector(name, {
            "connector.class": SHARE_SINK,
            "share.sink.connector.class": FILE_SINK,
            "share.commit.interval.ms": 500,
            "topics": topic,
            "tasks.max": 2,
            "file": str(out_file),
            "key.converter": STRING,
            "value.converter": STRING,
            # Connect's own DLQ producer, named through producer.override.* as the classic
            # runtime names its DLQ producer: its metrics show the override reached it.
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": f"{name}-dlq",
            "errors.deadletterqueue.topic.replication.factor": 1,   # one broker
            "share.dlq.mode": "connect",
            "producer.override.client.id": f"{name}-dlq-producer",
        })
        rest.wait_connector_running(name, tasks=2, timeout=120)
        wait_for("all records in the file",
                  lambda: set(_connector_lines(out_file)) >= set(values), timeout=60)

        def query_pattern(pattern):
            out = subprocess.run(
                [java, str(source), f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{port}/jmxrmi",
                 pattern],
                capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            return out.stdout.splitlines()

        def query():
            return query_pattern(f"kafka.connect:type=plugins,connector={name},*")

        def total(lines, metric):
            return sum(float(l.rsplit("=", 1)[1]) for l in lines if f" {metric}=" in l)

        def accepted_and_lag():
            lines = query()
            accepted = total(lines, "share-records-accepted-total")
            lag = [l for l in lines if " share-group-lag=" in l]
            return (lines, accepted, lag) if accepted >= len(values) and len(lag) == 3 else None

        lines, accepted, lag = wait_for("metrics in JMX", accepted_and_lag, timeout=60,
                                         interval=3)
        print(f"\nJMX: share-records-accepted-total over tasks = {accepted:.0f}; "
              + "; ".join(l.split(",", 2)[-1] for l in lag))
        # The engine's own counters: every record was fetched by some task's engine, in requests.
        fetched = total(lines, "share-engine-records-fetched-total")
        fetches = total(lines, "share-engine-fetch-requests-total")
        print(f"JMX: engine records fetched {fetched:.0f} in {fetches:.0f} fetch requests")
        assert fetched >= len(values) and fetches >= 1, lines
        producer = [l for l in query_pattern(
            f"kafka.producer:type=producer-metrics,client-id={name}-dlq-producer") if l]
        print(f"JMX: {len(producer)} attributes of the DLQ producer named by producer.override")
        assert producer, "no producer named by producer.override.client.id"
        assert any("task=0" in l for l in lines) and any("task=1" in l for l in lines)
    finally:
        with contextlib.suppress(Exception):
            cluster.rest(1).delete_connector(name)
        cluster.stop_worker(1)


@pytest.mark.parametrize("mode", ["broker", "connect"])
def test_dead_letters_and_worker_converter_defaults(cluster: Cluster, worker: Rest, mode: str):
    """The connector sets no converters, so the worker file's JsonConverter with
    value.converter.schemas.enable=true applies: enveloped records are good, a bare JSON string is
    poison. With errors.tolerance=all the poison record goes to the DLQ: written by the broker
    (mode auto with a dlq.-prefixed topic on a share.version 2 cluster: __dlq.errors.* headers,
    payload copied) or by the task (a topic without the prefix: Connect's __connect.errors.*
    headers); every good record reaches the file."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"wiring-dlq-{mode}-{suffix}"
    name = f"wiring-dlq-{mode}-{suffix}"
    dlq = f"dlq.{name}" if mode == "broker" else f"{name}-dead"
    out_file = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    cluster.create_topic(dlq, partitions=1,
                         config={"errors.deadletterqueue.group.enable": "true"}
                         if mode == "broker" else None)
    good = [f'{{"schema":{{"type":"string"}},"payload":"good-{i:03d}"}}' for i in range(50)]
    poison = '"bare-json-without-envelope"'
    cluster.produce(topic, good[:25] + [poison] + good[25:],
                    keys=[f'{{"schema":{{"type":"string"}},"payload":"k{i}"}}' for i in range(51)])
    worker.put_connector(name, {
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": FILE_SINK,
        "share.commit.interval.ms": 500,
        "topics": topic,
        "tasks.max": 2,
        "file": str(out_file),
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.context.headers.enable": "true",
    })
    try:
        worker.wait_connector_running(name, tasks=2, timeout=120)
        expected = {f"good-{i:03d}" for i in range(50)}
        wait_for("the good records", lambda: set(_connector_lines(out_file)) >= expected,
                  timeout=60)
        records = wait_for(f"the poison record in {dlq}",
                            lambda: cluster.consume(dlq, 1, timeout_ms=5000, print_headers=True),
                            timeout=60, interval=1)
        # One record; Connect's stack-trace header spans lines in the console consumer's output.
        text = "\n".join(records)
        print(f"\n{mode} DLQ record: {text[:300]} ... {text[-80:]}")
        assert text.endswith(poison), text
        if mode == "broker":
            assert "__dlq.errors.topic:" + topic in text, text
        else:
            assert "__connect.errors.topic:" + topic in text, text
            assert "__dlq.errors" not in text, text
        configs = cluster.describe_configs("groups", f"connect-share-{name}")
        assert configs.get("errors.deadletterqueue.topic.name", "") == (
            dlq if mode == "broker" else ""), configs
    finally:
        worker.delete_connector(name)


@pytest.mark.parametrize("password_ok", [True, False])
def test_sasl_ssl_settings_on_the_connector(cluster: Cluster, worker: Rest, password_ok: bool):
    """share.consumer.* carries SASL_SSL settings (SCRAM-SHA-512, PKCS12 truststore) to the native
    engine, admin.override.* to the admin client that sets the group's configs (share.consumer.*
    is the consumer's only, as consumer.override.* under the classic runtime). With a wrong
    password in the admin's settings, validation passes (its servers are the connector's choice,
    admin.override.bootstrap.servers, and validation connects to no server a caller chose, as
    Connect's own validation connects to no cluster: docs/security.md); the connector's start then
    fails, its trace naming the authentication failure, and the worker stays up."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"wiring-sasl-{suffix}"
    name = f"wiring-sasl-{suffix}"
    out_file = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    values = [f"sasl-{i:03d}" for i in range(100)]
    cluster.produce(topic, values, keys=[f"k{i}" for i in range(100)])
    client = cluster.sasl_ssl_client_config()
    if not password_ok:
        client["sasl.jaas.config"] = client["sasl.jaas.config"].replace(
            'password="', 'password="wrong-')
    config = {
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": FILE_SINK,
        "topics": topic,
        "tasks.max": 2,
        "file": str(out_file),
        "key.converter": STRING,
        "value.converter": STRING,
    }
    config.update({f"share.consumer.{k}": v for k, v in client.items()})
    config.update({f"admin.override.{k}": v for k, v in client.items()})
    errors = Rest.validation_errors(worker.validate("ShareSinkConnector", dict(config, name=name)))
    assert errors == {}, errors
    if not password_ok:
        worker.put_connector(name, config)
        try:
            def failed() -> bool:
                try:
                    st = worker.connector_status(name)
                except RestError:
                    return False  # not there yet
                states = [st.get("connector", {}).get("state")]
                states += [t.get("state") for t in st.get("tasks", [])]
                return "FAILED" in states
            wait_for(f"connector {name} FAILED", failed, timeout=120,
                     on_timeout=lambda: connector_trace(worker, name))
            trace = connector_trace(worker, name)
            assert "uthentication" in trace, trace
            print(f"\nwrong password, start: {trace[:300]}")
            assert not _connector_lines(out_file), "records written with a refused admin client"
        finally:
            worker.delete_connector(name)
        assert worker.get("/")["version"]
        return
    worker.put_connector(name, config)
    try:
        worker.wait_connector_running(name, tasks=2, timeout=120)
        wait_for("records over SASL_SSL",
                  lambda: set(_connector_lines(out_file)) >= set(values), timeout=60)
    finally:
        worker.delete_connector(name)
