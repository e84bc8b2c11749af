"""Scenario 1: Kafka's FileStream sink (its own plugin directory) through sharesink, 3 partitions,
tasks.max=8 (more tasks than partitions).

- every record lands in the file: count and content (unique values, none lost, none unexpected);
- no record is ACCEPTed before the sink has it: sampled during the run, the records the share
  group has acknowledged (sum of the share-partition start offsets, read first) never exceed
  the lines in the file (read after);
- after the run, with the connector stopped: the group's lag is 0 and Kafka's own share
  consumer finds nothing left in the group, and nothing more arrives in the file.

About the one shared file: every task of a connector gets the same `file`. FileStreamSinkTask
(connect-file 4.3.1, checked with javap) writes through `new PrintStream(Files.newOutputStream(
path, CREATE, APPEND), false, UTF_8)`: no BufferedOutputStream, so each `println` is one
O_APPEND write() of "value\\n" and lines of different tasks cannot interleave inside a line;
`flush()` has nothing left to flush. The content check (every line is exactly one produced
value) would catch interleaving. The ACCEPT-after-flush invariant is therefore checked as
"ACCEPTed <= written", which is what this sink can show.
"""

from __future__ import annotations

import time

from harness.cluster import Cluster, Rest
from helpers import (FILE_SINK, STRING_CONVERTER, Progress, Sampler, accepted_upper_bound,
                     connector_trace, count_figures, delete_connector, drain_group, file_line_count,
                     file_lines, group_of, produce_values, record_figures,
                     settled_share_group_offsets, share_config, share_group_offsets,
                     start_connector, stop_connector, total_lag, uniq)

N = 30_000
TASKS = 8


def test_filestream_every_record_once_in_the_file(cluster: Cluster, worker: Rest):
    name = uniq("fs-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    values = [f"{name}-v{i:06d}" for i in range(N)]
    keys = [f"k{i}" for i in range(N)]
    produce_values(cluster, topic, values[: N // 2], keys=keys[: N // 2])

    cfg = share_config(cluster, name, topic, FILE_SINK, TASKS, file=str(out))
    cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
                "share.commit.interval.ms": "1000"})
    group = group_of(name)
    started = time.monotonic()
    try:
        status = start_connector(worker, name, cfg, tasks=TASKS)
        assert len(status["tasks"]) == TASKS

        violations = []

        def sample():
            offs = share_group_offsets(cluster, group)   # first what the group has ACCEPTed ...
            lines = file_line_count(out)                    # ... then what the file holds
            acc = accepted_upper_bound(offs)
            if acc > lines:
                violations.append((acc, lines, offs))
            return (acc, lines)

        sampler = Sampler(sample, interval=1.0)
        sampler.start()
        produce_values(cluster, topic, values[N // 2:], keys=keys[N // 2:])
        Progress("lines in the file", lambda: file_line_count(out)).wait(
            N, stall=90, timeout=600, on_timeout=lambda: connector_trace(worker, name))
        elapsed = time.monotonic() - started
        time.sleep(3)  # one more commit cycle, then stop: the final commit ACCEPTs the rest
        stop_connector(worker, name)
        samples = sampler.stop()
        lines_at_stop = file_line_count(out)

        offs = settled_share_group_offsets(cluster, group)
        lag = total_lag(offs)
        time.sleep(5)
        lines_after = file_line_count(out)
        left = drain_group(cluster, topic, group, N, timeout_ms=10000)

        got = file_lines(out)
        figs = count_figures(values, got)
        record_figures("1-filestream", tasks=TASKS, partitions=3, **figs,
                       seconds_to_all_lines=round(elapsed, 1),
                       accept_before_write_violations=len(violations),
                       invariant_samples=len(samples),
                       group_lag_after_stop=lag, left_in_group_after_stop=left,
                       lines_after_stop_delta=lines_after - lines_at_stop)
        assert not violations, f"records ACCEPTed before they were in the file: {violations[:3]}"
        assert figs["lost"] == 0, f"{figs['lost']} records never reached the file"
        assert figs["unexpected"] == 0, "lines that are not produced values (interleaved writes?)"
        assert figs["duplicated"] == 0, f"{figs['duplicated']} duplicates without any fault"
        assert len(got) == N
        assert lag == 0, f"share group lag after stop: {offs}"
        assert left == 0, f"{left} records were still in the share group after the run"
        assert lines_after == lines_at_stop, "lines were written after the connector stopped"
        # The sampler must have seen progress, or the invariant check proved nothing.
        assert any(isinstance(v, tuple) and v[0] > 0 for _, v in samples), \
            f"the share group never showed an acknowledged record while sampling: {samples[-3:]}"
    finally:
        delete_connector(worker, name)
