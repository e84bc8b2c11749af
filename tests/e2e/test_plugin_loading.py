"""Walking skeleton, end to end: the sharesink plugin archive in a real Connect 4.4 worker, a real
broker, and a third-party sink (Kafka's FileStream sink) from its own plugin directory.

- A ShareSinkConnector wrapping FileStreamSinkConnector starts through REST; the connector and its
  tasks are RUNNING, the legacy task ran in its own plugin (it created its output file), and the
  Rust engine, reached through JNI, started a share-group member on the broker (its log line
  names the ShareFetch/ShareAcknowledge versions the broker serves).
- Worker 0 runs with plugin.discovery=service_load (the harness's default where every plugin
  has its manifests): it lists ShareSinkConnector from our service manifest.
- A worker with plugin.discovery=hybrid_warn (Connect's default: a reflection scan besides the
  manifests) whose -Dsharesink.native.library names a garbage file lists ShareSinkConnector too,
  reports a readable error through the validate endpoint and keeps running.
"""

from __future__ import annotations

import contextlib
import re
import uuid


from harness.cluster import Cluster, Rest, default_plugin_archive
from helpers import FILE_SINK, SHARE_SINK, wait_for, worker_log


# A second, separate Connect cluster for worker 1: it must not join worker 0's group, or the
# connectors of worker 0 could be rebalanced onto a worker started with a broken library.
AUX_WORKER = {
    "group.id": "sharesink-skeleton-aux",
    "config.storage.topic": "connect-skeleton-aux-configs",
    "offset.storage.topic": "connect-skeleton-aux-offsets",
    "status.storage.topic": "connect-skeleton-aux-status",
}

# The task's line once the native engine has started its member, and the engine's own line (drained
# from the native log queue on the task thread) with the protocol versions the broker serves.
STARTED_LINE = re.compile(
    r"sharesink native engine (?P<version>\S+) started member (?P<member>\S+) of share group "
    r"(?P<group>\S+)")
ENGINE_LINE = re.compile(
    r"starting share consumer .*share_fetch_version=(?P<fetch>\d+) "
    r"share_acknowledge_version=(?P<ack>\d+)")


def _plugin_version() -> str:
    archive = default_plugin_archive()
    m = re.match(r"sharesink-(.+)-plugin\.zip$", archive.name) if archive else None
    assert m, f"cannot tell the plugin version from {archive}"
    return m.group(1)


@contextlib.contextmanager
def _worker(cluster: Cluster, index: int, jvm_options=(), **kwargs):
    """Worker `index` for the duration of the block, with extra JVM options when given."""
    if jvm_options:
        kwargs["jvm_opts"] = list(jvm_options)
    cluster.start_worker(index, **kwargs)
    try:
        yield cluster.rest(index)
    finally:
        cluster.stop_worker(index)


def test_share_sink_runs_file_sink_and_reaches_the_broker(cluster: Cluster, worker: Rest):
    version = _plugin_version()
    props = (cluster.state_dir / "config" / "worker-0.properties").read_text()
    assert "plugin.discovery=service_load" in props.splitlines(), \
        "worker 0 is expected to find its plugins through their ServiceLoader manifests"
    plugins = {p["class"]: p for p in worker.plugins()}
    assert SHARE_SINK in plugins, f"worker 0 does not list {SHARE_SINK}: {sorted(plugins)}"
    assert plugins[SHARE_SINK]["version"] == version
    assert plugins[SHARE_SINK]["type"] == "source"
    assert FILE_SINK in plugins, "the FileStream sink plugin dir is missing from plugin.path"

    suffix = uuid.uuid4().hex[:8]
    topic = f"skeleton-{suffix}"
    name = f"skeleton-{suffix}"
    out_file = cluster.state_dir / f"skeleton-{suffix}.out"
    cluster.create_topic(topic, partitions=3)
    log_before = len(worker_log(cluster, 0))

    worker.put_connector(name, {
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": FILE_SINK,
        "share.consumer.bootstrap.servers": cluster.bootstrap,
        "topics": topic,
        "tasks.max": 2,
        "file": str(out_file),
    })
    try:
        status = worker.wait_connector_running(name, tasks=2, timeout=120)
        assert status["type"] == "source"

        # Each task started a share member through the Rust engine and logged it.
        def started_lines():
            log = worker_log(cluster, 0)[log_before:]
            found = list(STARTED_LINE.finditer(log))
            engine = list(ENGINE_LINE.finditer(log))
            return (found, engine) if len(found) >= 2 and len(engine) >= 2 else None

        lines, engine_lines = wait_for("the native engine's start lines in worker-0.log",
                                        started_lines)
        for line in lines:
            assert line.group("version") == version
            assert line.group("group") == f"connect-share-{name}"
        for line in engine_lines:
            assert int(line.group("fetch")) >= 1 and int(line.group("ack")) >= 1
        print("\n" + lines[0].group(0) + "\n" + engine_lines[0].group(0))

        # The legacy FileStreamSinkTask started inside its own plugin loader: it opened its file.
        assert out_file.exists(), f"FileStreamSinkTask did not create {out_file}"
    finally:
        worker.delete_connector(name)


def test_corrupted_native_library_is_a_readable_validation_error(cluster: Cluster, worker: Rest):
    garbage = cluster.state_dir / "garbage-libsharesink_jni.so"
    garbage.write_bytes(b"\x7fELF but not really a shared object\n" * 8)
    config = {
        "share.sink.connector.class": FILE_SINK,
        "share.consumer.bootstrap.servers": cluster.bootstrap,
        "topics": "skeleton-validate",
        "file": str(cluster.state_dir / "never-written.out"),
        # Forced: the default (auto) would run the Java engine instead, checked below.
        "share.engine": "native",
    }
    with _worker(cluster, 1, jvm_options=[f"-Dsharesink.native.library={garbage}"],
                 discovery="hybrid_warn", extra=AUX_WORKER) as rest:
        classes = [p["class"] for p in rest.plugins()]
        assert SHARE_SINK in classes, f"the hybrid_warn worker lists {classes}"
        auto = Rest.validation_errors(rest.validate(
            "ShareSinkConnector", {k: v for k, v in config.items() if k != "share.engine"}))
        assert "share.sink.connector.class" not in auto, \
            f"share.engine=auto should fall back to the Java engine, not fail: {auto}"
        for _ in range(2):  # the failure is kept: the second answer is the same
            result = rest.validate("ShareSinkConnector", config)
            errors = Rest.validation_errors(result)
            assert "share.sink.connector.class" in errors, f"validate answered {errors}"
            message = " ".join(errors["share.sink.connector.class"])
            assert str(garbage) in message, message
            assert "-Dsharesink.native.library" in message, message
        print(f"\nvalidate error: {message}")
        # The worker is still up and serving.
        assert rest.get("/")["version"]
        assert cluster.is_running("worker-1")
