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

import re
import time
import uuid

import pytest

from harness.cluster import Cluster, Rest

SHARE_SINK = "io.sharesink.connect.ShareSinkConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def _wait_for(what: str, check, timeout: float = 60, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen within {timeout}s", pytrace=False)
        time.sleep(interval)


def _log_text(cluster: Cluster, index: int = 0) -> str:
    path = cluster.logs_dir / f"worker-{index}.log"
    return path.read_text(errors="replace") if path.exists() else ""


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
    log_before = len(_log_text(cluster))

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

        lines = _wait_for(f"{len(values)} records in {out_file}", all_lines, timeout=90)
        assert set(lines) == set(values)
        duplicates = len(lines) - len(set(lines))
        print(f"\n{engine}: {len(values)} produced, {len(set(lines))} delivered, "
              f"{duplicates} duplicates")

        configs = cluster.describe_configs("groups", group)
        assert configs.get("share.auto.offset.reset") == "earliest", configs

        log = _log_text(cluster)[log_before:]
        # Task lines carry the connector context the worker puts in the MDC: "[name|task-N] ".
        task_lines = re.findall(rf"\[{re.escape(name)}\|task-\d\] .*runs on share group {group}",
                                log)
        assert len(task_lines) == 4, log[-3000:]
        assert _group_members(cluster, group) == 4
    finally:
        worker.delete_connector(name)
    # Stop closes the sessions and leaves the group: no member waits for a session timeout.
    _wait_for(f"{group} without members", lambda: _group_members(cluster, group) == 0,
              timeout=20)
    log = _log_text(cluster)[log_before:]
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
