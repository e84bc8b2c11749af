"""Scenario 26 (issue 40): when sharesink cannot see the worker's configuration, the override
policy fails closed.

sharesink learns the worker's configuration (and so its `connector.client.config.override.policy`)
from its REST extension, which the worker configures with it, or else from the file named after
`ConnectDistributed` on the JVM's command line. Before this, a worker with neither seen was taken
for one that sets nothing, whose policy is Kafka's default `All`: every override went through.

The worker here (index 1, its own Connect group and topics) runs without sharesink's REST
extension, and its configuration file is deleted once it has started, as a launcher does that
renders a configuration holding secrets into a temporary file and removes it after the start.
(The harness always names the file on the command line; a worker started through a wrapper main
class is the other way to get here, and sharesink sees the same thing: no readable file.)

- while the file is there, a share-mode connector with `share.consumer.*` and
  `consumer.override.*` settings validates without a policy error (the control: the worker's
  policy is `All`);
- once it is gone, validation refuses each of them on its key, naming the fix (the REST
  extension in `rest.extension.classes`, or the file on the command line), and so does a create
  (400); no value is echoed;
- the worker's log has one WARN naming the fix.
"""

from __future__ import annotations

import re

from harness.cluster import Cluster, RestError, default_plugin_archive
from helpers import (FILE_SINK, SHARE_SINK, STRING_CONVERTER, LogMark, delete_connector,
                     stop_worker_if_running, uniq)

WORKER = 1
OVERRIDES = {
    "share.consumer.max.poll.records": "7919",
    "consumer.override.fetch.max.wait.ms": "4273",
}
FIX = "rest.extension.classes"


def _config(name: str, topic: str, out) -> dict:
    cfg = {"name": name, "connector.class": SHARE_SINK, "share.sink.connector.class": FILE_SINK,
           "topics": topic, "tasks.max": "1", "file": str(out),
           "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
    cfg.update(OVERRIDES)
    return cfg


def test_overrides_are_refused_when_the_worker_config_cannot_be_seen(cluster: Cluster, tmp_path):
    tag = uniq("")
    stop_worker_if_running(cluster, WORKER)
    cluster.start_worker(WORKER, plugin_archive=default_plugin_archive(), extra={
        "group.id": f"sharesink-e2e-invisible-{tag}",
        "config.storage.topic": f"connect-e2e-invisible-{tag}-configs",
        "offset.storage.topic": f"connect-e2e-invisible-{tag}-offsets",
        "status.storage.topic": f"connect-e2e-invisible-{tag}-status",
        "rest.extension.classes": None,
    })
    rest = cluster.rest(WORKER)
    worker_file = cluster.state_dir / "config" / f"worker-{WORKER}.properties"
    name = uniq("invisible-")
    topic = uniq("invisible-")
    cluster.create_topic(topic)
    cfg = _config(name, topic, tmp_path / "out.txt")
    log = LogMark(cluster, WORKER)
    try:
        # The control: the file is readable, the worker's policy (All) allows the overrides.
        assert worker_file.is_file()
        seen = rest.validation_errors(rest.validate(SHARE_SINK, cfg))
        assert not set(OVERRIDES) & set(seen), seen

        worker_file.unlink()
        errors = rest.validation_errors(rest.validate(SHARE_SINK, cfg))
        for key, value in OVERRIDES.items():
            assert key in errors, errors
            message = " ".join(errors[key])
            assert FIX in message and "ShareModeRestExtension" in message, message
            assert "ConnectDistributed" in message, message
            # No value echoed; the message names the worker file, whose path is the checkout's
            # (a run in /tmp/ci7 once found the value "7" there).
            assert value not in message.replace(str(worker_file), "<worker file>"), message

        try:
            rest.post("/connectors", {"name": name, "config": cfg})
            created = True
        except RestError as e:
            created = False
            assert e.status == 400, e
            text = str(e.body)
            assert all(key in text for key in OVERRIDES), text
        assert not created, "a connector with overrides was created on a worker whose policy " \
                            "sharesink cannot see"
        assert name not in rest.connectors()

        warns = log.lines(r"WARN .*sharesink cannot see this worker's configuration")
        assert len(warns) == 1, warns
        assert FIX in warns[0] and "ShareModeRestExtension" in warns[0], warns[0]
        assert re.search(r"cannot be read|names no worker", warns[0]), warns[0]
    finally:
        delete_connector(rest, name)
        stop_worker_if_running(cluster, WORKER)
