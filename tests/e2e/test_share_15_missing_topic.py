"""Scenario 15: a connector on a topic that does not exist yet (issue 15, "mistakes caught before
a task starts").

- validation passes (a missing topic is not an error: it may be created after the connector) and
  the worker that validated logs a WARN naming the topic and the connector;
- the connector starts, its tasks are RUNNING, and the connector logs the same WARN;
- once the topic is created, the connector logs that it exists (once), and every record produced
  to it reaches the file.
"""

from __future__ import annotations

import time

from harness.cluster import Cluster, Rest
from helpers import (FILE_SINK, STRING_CONVERTER, LogMark, connector_trace, delete_connector,
                     file_lines, produce_values, record_figures, share_config, start_connector,
                     uniq, wait_for)

N = 200


def test_missing_topic_is_warned_about_until_it_appears(cluster: Cluster, worker: Rest):
    name = uniq("missing-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cfg = share_config(cluster, name, topic, FILE_SINK, 2, file=str(out))
    cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                "share.commit.interval.ms": "1000"})
    mark = LogMark(cluster)

    errs = Rest.validation_errors(worker.validate("ShareSinkConnector", cfg))
    assert errs == {}, f"a missing topic must not fail validation: {errs}"
    validate_warn = f"Validating connector {name}: topic {topic} does not exist"
    wait_for("the validation WARN", lambda: mark.lines(validate_warn), timeout=30)
    assert all(" WARN " in l for l in mark.lines(validate_warn)), mark.lines(validate_warn)

    try:
        status = start_connector(worker, name, cfg, tasks=2)
        assert all(t["state"] == "RUNNING" for t in status["tasks"]), status
        start_warn = f"Connector {name}: topic {topic} does not exist"
        wait_for("the connector's WARN", lambda: mark.lines(start_warn), timeout=30)
        warned_at = time.monotonic()

        cluster.create_topic(topic, partitions=2)
        values = [f"{name}-v{i:04d}" for i in range(N)]
        produce_values(cluster, topic, values)
        appeared = f"Connector {name}: topic {topic} exists now"
        wait_for("the connector noticing the topic", lambda: mark.lines(appeared), timeout=60)
        noticed_after = time.monotonic() - warned_at
        wait_for(f"{N} lines in the file", lambda: len(file_lines(out)) >= N, timeout=120,
                 on_timeout=lambda: connector_trace(worker, name))
        got = file_lines(out)
        record_figures("15-missing-topic", records=N, lines=len(got),
                       start_warnings=len(mark.lines(start_warn)),
                       appeared_lines=len(mark.lines(appeared)),
                       seconds_from_warn_to_noticed=round(noticed_after, 1))
        assert sorted(got) == sorted(values), "every record once in the file"
        assert len(mark.lines(appeared)) == 1, mark.lines(appeared)
    finally:
        delete_connector(worker, name)
