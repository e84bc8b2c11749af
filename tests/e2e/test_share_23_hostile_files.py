"""Scenario 23: a connector config names a hostile file (issue 40).

A tenant's connector sets `share.consumer.security.protocol=SSL`,
`share.consumer.ssl.truststore.type=PEM` and `share.consumer.ssl.truststore.location` naming
(a) `/dev/zero`, (b) a FIFO, (c) a 3 GiB sparse file (made with truncate: no disk used). Before
the fix the native engine read such a file whole at the task's start (3 GiB of RSS, the OOM
killer for `/dev/zero`) or waited on the FIFO in `start()` for good.

- validation (`PUT /connector-plugins/ShareSinkConnector/config/validate`, and the KIP's form
  through the REST extension) refuses each with an error on the key that names the path;
- creating the connector is refused the same way (Connect validates on create, the explicit
  `ShareSinkConnector` form included);
- a running connector whose trust store is swapped for each of them fails its restarted task with
  a trace naming the key, with the native engine and with `share.engine=java` (Kafka's
  `KafkaShareConsumer`, which would read the file just as whole); no task stays in start;
- the worker's RSS (VmRSS of its process) stays within 256 MiB of where it was, and the worker
  keeps answering.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from harness.cluster import Cluster, Rest, RestError
from helpers import (FILE_SINK, SHARE_FLAG, SHARE_SINK, STRING_CONVERTER, Progress,
                     connector_trace, delete_connector, file_line_count, produce_values,
                     record_figures, start_connector, task_states, uniq, wait_for)

KEY = "share.consumer.ssl.truststore.location"
RSS_BOUND_KIB = 256 * 1024
SPARSE_BYTES = 3 << 30


def _worker_rss_kib(cluster: Cluster) -> int:
    pid = cluster.status()["worker-0"]["pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for the worker (pid {pid})")


def _release_fifo(path: Path) -> None:
    """Should anything have opened the FIFO to write or read, let it go on (read-write never
    blocks), then remove it."""
    if path.is_fifo():
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        os.close(fd)
    path.unlink(missing_ok=True)


# Each hostile kind: how to put it at a path, and what its refusal says.
def _dev_zero(path: Path) -> str:
    path.symlink_to("/dev/zero")
    return "is a character device, not a regular file"


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "is a FIFO, not a regular file"


def _sparse(path: Path) -> str:
    with open(path, "wb") as f:
        f.truncate(SPARSE_BYTES)
    assert path.stat().st_size == SPARSE_BYTES
    return "holds more than 16777216 bytes"


HOSTILE: Dict[str, Callable[[Path], str]] = {"dev-zero": _dev_zero, "fifo": _fifo,
                                             "sparse-3GiB": _sparse}


def _clear(path: Path) -> None:
    if path.is_fifo():
        _release_fifo(path)
    elif path.is_symlink() or path.exists():
        path.unlink()


def _hostile_path(cluster: Cluster, name: str, kind: str):
    """A path holding `kind`, and what its refusal says."""
    path = cluster.state_dir / f"{name}-{kind}.pem"
    _clear(path)
    return path, HOSTILE[kind](path)


def _error_text(e: RestError) -> str:
    return str(e.body)


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_validation_and_creation_refuse_a_hostile_truststore(cluster: Cluster, worker: Rest,
                                                             kind: str):
    name = uniq(f"hostile-{kind}-")
    path, says = _hostile_path(cluster, name, kind)
    before = _worker_rss_kib(cluster)
    ssl = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
           "ssl.truststore.location": str(path)}
    explicit = {"name": name, "connector.class": SHARE_SINK,
                "share.sink.connector.class": FILE_SINK, "topics": name, "tasks.max": "1",
                "file": str(cluster.state_dir / f"{name}.out")}
    explicit.update({f"share.consumer.{k}": v for k, v in ssl.items()})
    flag = {"name": name, "connector.class": FILE_SINK, SHARE_FLAG: "share", "topics": name,
            "tasks.max": "1", "file": str(cluster.state_dir / f"{name}.out")}
    flag.update({f"consumer.override.{k}": v for k, v in ssl.items()})
    try:
        for form, cfg, key in (("explicit", explicit, KEY),
                               ("KIP", flag, "consumer.override.ssl.truststore.location")):
            errors = Rest.validation_errors(worker.validate(cfg["connector.class"], cfg))
            print(f"\n{kind} ({form}) validate -> {errors}")
            assert list(errors) == [key], errors
            message = " ".join(errors[key])
            assert f"{path} {says}" in message, message

            with pytest.raises(RestError) as refused:
                worker.put_connector(name, cfg)
            text = _error_text(refused.value)
            print(f"{kind} ({form}) create -> HTTP {refused.value.status}: {text[:400]}")
            assert refused.value.status == 400, text
            assert key in text and str(path) in text and says in text, text
            assert name not in worker.connectors()
        grown = _worker_rss_kib(cluster) - before
        assert grown < RSS_BOUND_KIB, f"the worker's RSS grew by {grown} KiB"
        record_figures(f"23-validate-{kind}", rss_growth_kib=grown, message=message[:300])
    finally:
        delete_connector(worker, name)
        _clear(path)


def _sasl_ssl_with_pem_truststore(cluster: Cluster, truststore: Path) -> Dict[str, str]:
    """The share consumer on the broker's SASL_SSL listener with a PEM trust store at
    `truststore`; the admin client as scenario 9 sets it (its own PKCS12 trust store)."""
    client = cluster.sasl_ssl_client_config("SCRAM-SHA-512")
    cfg = {f"admin.override.{k}": v for k, v in client.items()}
    consumer = dict(client)
    consumer.pop("ssl.truststore.password")
    consumer.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore)})
    cfg.update({f"share.consumer.{k}": v for k, v in consumer.items()})
    return cfg


def _task_trace_saying(worker: Rest, name: str, says: str):
    """The trace of task 0 once it is FAILED for the reason `says` (not an earlier failure)."""
    st = worker.connector_status(name)
    for t in st.get("tasks", []):
        if t.get("id") == 0 and t.get("state") == "FAILED" and says in (t.get("trace") or ""):
            return t["trace"]
    return None


@pytest.mark.parametrize("engine", ["auto", "java"])
def test_a_task_whose_truststore_turns_hostile_fails_naming_the_key(cluster: Cluster,
                                                                    worker: Rest, engine: str):
    name = uniq(f"hostile-task-{engine}-")
    out = cluster.state_dir / f"{name}.out"
    truststore = cluster.state_dir / f"{name}-truststore.pem"
    shutil.copyfile(cluster.ca_pem, truststore)
    cluster.create_topic(name, partitions=1)
    produce_values(cluster, name, [f"{name}-v{i}" for i in range(100)])
    cfg = {"connector.class": SHARE_SINK, "share.sink.connector.class": FILE_SINK,
           "topics": name, "tasks.max": "1", "file": str(out),
           "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
           "share.engine": engine, "share.commit.interval.ms": "1000"}
    cfg.update(_sasl_ssl_with_pem_truststore(cluster, truststore))
    figures: Dict[str, object] = {}
    try:
        # Positive control: the PEM trust store at that path is one the consumer takes.
        start_connector(worker, name, cfg, tasks=1)
        Progress("lines over SASL_SSL with a PEM trust store", lambda: file_line_count(out)).wait(
            100, stall=90, on_timeout=lambda: connector_trace(worker, name))
        before = _worker_rss_kib(cluster)
        figures["rss_before_kib"] = before
        traces: List[str] = []
        for kind, make in HOSTILE.items():
            _clear(truststore)
            says = make(truststore)
            worker._retry_busy(lambda: worker.post(f"/connectors/{name}/tasks/0/restart"))
            trace = wait_for(f"task 0 to fail on the {kind} trust store", lambda: _task_trace_saying(
                worker, name, says), timeout=120, interval=0.5,
                on_timeout=lambda: connector_trace(worker, name))
            print(f"\n{engine} {kind}: {trace.splitlines()[0][:400]}")
            assert f"{KEY}: {truststore} {says}" in trace, trace[:3000]
            traces.append(trace.splitlines()[0])
            grown = _worker_rss_kib(cluster) - before
            figures[f"rss_growth_{kind}_kib"] = grown
            assert grown < RSS_BOUND_KIB, f"{kind}: the worker's RSS grew by {grown} KiB"
            assert worker.get("/")["version"], "the worker does not answer"
            assert cluster.is_running("worker-0")
        # The trust store back: the same task starts again.
        _clear(truststore)
        shutil.copyfile(cluster.ca_pem, truststore)
        worker._retry_busy(lambda: worker.post(f"/connectors/{name}/tasks/0/restart"))
        # (not wait_connector_running: it would take the last failure, still shown, for a new one)
        wait_for("task 0 RUNNING again with the trust store back",
                 lambda: task_states(worker, name).get(0) == "RUNNING", timeout=120,
                 on_timeout=lambda: connector_trace(worker, name))
        record_figures(f"23-task-{engine}", **figures, traces=[t[:200] for t in traces])
    finally:
        delete_connector(worker, name)
        _clear(truststore)
