"""Scenario 31 (issue 56): share mode on a worker with exactly-once source support.

Workers that host exactly-once source connectors (Debezium, MirrorMaker 2) run with
`exactly.once.source.support=enabled`, and to the runtime a share-mode connector is a source
connector: each of its tasks gets a transactional producer (transactional id
`<worker group>-<connector>-<task>`), initialised at the task's start, which fences an older
generation of the task. The tasks' `poll()` returns no records, so the producer never begins a
transaction. This runs a FileStream sink in share mode beyond the partition count on such a worker
(index 1, a Connect group of its own) and checks that
- every record reaches the file, no task FAILED;
- each task's transactional id is known to the broker (the worker did build the producers the
  docs describe), with no transaction left open.
"""

from __future__ import annotations

from harness.cluster import Cluster, default_plugin_archive
from helpers import (FILE_SINK, STRING_CONVERTER, Progress, assert_no_failed_task,
                     delete_connector, file_lines, produce_values, record_figures, share_config,
                     start_connector, stop_worker_if_running, uniq)

WORKER = 1
TASKS = 3
RECORDS = 3_000
TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"


def test_share_mode_runs_on_a_worker_with_exactly_once_source_support(cluster: Cluster, tmp_path):
    tag = uniq("")
    group = f"sharesink-e2e-eos-{tag}"
    stop_worker_if_running(cluster, WORKER)
    cluster.start_worker(WORKER, plugin_archive=default_plugin_archive(), extra={
        "group.id": group,
        "config.storage.topic": f"connect-e2e-eos-{tag}-configs",
        "offset.storage.topic": f"connect-e2e-eos-{tag}-offsets",
        "status.storage.topic": f"connect-e2e-eos-{tag}-status",
        "exactly.once.source.support": "enabled",
    })
    rest = cluster.rest(WORKER)
    name = uniq("eos-")
    topic = name
    out = tmp_path / "out.txt"
    cluster.create_topic(topic, partitions=1)
    values = [f"{name}-v{i:06d}" for i in range(RECORDS)]
    try:
        produce_values(cluster, topic, values)
        cfg = share_config(cluster, name, topic, FILE_SINK, TASKS, file=str(out),
                           **{"key.converter": STRING_CONVERTER,
                              "value.converter": STRING_CONVERTER})
        start_connector(rest, name, cfg, tasks=TASKS)
        Progress("lines in the file", lambda: len(set(file_lines(out)))).wait(
            RECORDS, stall=60, timeout=300)
        assert_no_failed_task(rest, name)
        got = file_lines(out)
        assert set(got) == set(values), f"{len(set(values) - set(got))} records missing"

        listed = cluster.run_tool(TRANSACTIONS_COMMAND, "--bootstrap-server", cluster.bootstrap,
                                  "list").stdout
        ids = {f"{group}-{name}-{t}" for t in range(TASKS)}
        rows = [line.split() for line in listed.splitlines() if line.split()]
        states = {r[0]: r[-1] for r in rows if r[0] in ids}
        print(f"\ntransactional ids of the tasks: {states}")
        assert set(states) == ids, f"tasks' transactional ids missing: {ids - set(states)}\n{listed}"
        assert all(s in ("Empty", "CompleteCommit", "CompleteAbort") for s in states.values()), \
            states
        record_figures("31-exactly-once-worker", produced=RECORDS, in_sink=len(set(got)),
                       duplicates=len(got) - len(set(got)), tasks=TASKS, partitions=1,
                       transactional_ids=states)
    finally:
        delete_connector(rest, name)
        stop_worker_if_running(cluster, WORKER)
