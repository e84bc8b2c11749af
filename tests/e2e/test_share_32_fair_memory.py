"""Scenario 32: one tenant whose sink stalls on header-heavy records cannot stop another
tenant's fetching (issue 56: the worker's memory pool).

Worker 0 runs with a native bound of 64 MiB (`-Dsharesink.engine.memory.max.bytes`) and the
Prometheus JMX exporter's agent, so the test reads each task's `share-engine-memory-bytes`.

- The victim: Kafka's FileStream sink in share mode (one task) drains a backlog of small
  records; its rate alone is the control phase.
- The stalled tenant: four tasks of the tests' buffering sink whose `put` blocks (a control
  marker; no installable sink stalls on demand) on records of a few bytes of value and 32 KiB
  of headers each, with the largest buffer and fetches its own settings allow
  (`share.consumer.share.buffer.max.bytes` 16 MiB, `share.consumer.fetch.max.bytes` 8 MiB: a
  tenant's choice). Its members fetch until each holds its bound (16 MiB, a quarter of the
  worker's) or what the pool lets it take, and then hold it: their tasks never poll again.

The test waits until the stalled tenant holds at least half the worker's bound: where the old
pool stopped every member of the worker from fetching (records released while memory was held
burn delivery attempts too). Then, in the same run, the victim's rate stays within 20% of its
control phase, none of its records is released for memory, and the stalled tenant still holds
what it held.
"""

from __future__ import annotations

import time

import pytest

from buffering_sink import BUFFERING_SINK, BufferingSink
from harness.cluster import REPO_ROOT, Cluster, Rest, default_plugin_archive, ensure_jmx_exporter
from harness.kafka_wire import batch, record
from helpers import (FILE_SINK, STRING_CONVERTER, Progress, connector_trace, delete_connector,
                     file_line_count, record_figures, scrape, share_config, start_connector,
                     total, uniq, wait_for)
from hostile_records import produce_batch

MIB = 1 << 20
WORKER_BOUND = 64 * MIB
RULES = REPO_ROOT / "ops" / "prometheus" / "jmx-exporter.yaml"
METRICS_PORT_OFFSET = 87
# A backlog the victim does not drain in its phases (a FileStream task takes 100,000 to 300,000
# records/s here).
VICTIM_RECORDS = 6_000_000
PHASE_S = 6
STALLED_TASKS = 4
# Per partition of the stalled tenant's topic: 40 batches of 20 records of 32 KiB of headers,
# about 25 MiB, more than a member may hold.
HEADERS = 64
HEADER_VALUE = b"h" * 512
BATCHES, PER_BATCH = 40, 20
MEMORY = "sharesink_engine_memory_bytes"
RELEASED_FOR_MEMORY = "sharesink_engine_records_released_memory_total"


def _rate(out, seconds: float) -> float:
    before, t = file_line_count(out), time.monotonic()
    time.sleep(seconds)
    return (file_line_count(out) - before) / (time.monotonic() - t)


def _header_heavy_batch(first: int) -> bytes:
    headers = [(b"h%03d" % i, HEADER_VALUE) for i in range(HEADERS)]
    body = b"".join(record(i, None, b"v%07d" % (first + i), headers) for i in range(PER_BATCH))
    return batch(PER_BATCH, body)


@pytest.fixture
def pooled_worker(cluster: Cluster, worker: Rest):
    """Worker 0 with a native bound of WORKER_BOUND and the exporter's agent; worker 0 as the
    session started it afterwards."""
    archive = default_plugin_archive()
    port = cluster.port_base + METRICS_PORT_OFFSET
    agent = ensure_jmx_exporter()
    cluster.stop_worker(0)
    try:
        cluster.start_worker(0, plugin_archive=archive, jvm_opts=[
            f"-Dsharesink.engine.memory.max.bytes={WORKER_BOUND}",
            f"-javaagent:{agent}=127.0.0.1:{port}:{RULES}"])
        yield worker, port
    finally:
        cluster.stop_worker(0)
        cluster.start_worker(0, plugin_archive=archive)


# It compares rates: run alone.
@pytest.mark.alone
def test_a_stalled_tenant_leaves_the_others_fetching(cluster: Cluster, pooled_worker):
    worker, port = pooled_worker
    victim, stalled = uniq("victim-"), uniq("stalled-")
    victim_out = cluster.state_dir / f"{victim}.out"
    cluster.create_topic(victim, partitions=1)
    cluster.create_topic(stalled, partitions=STALLED_TASKS)
    cluster.produce(victim, VICTIM_RECORDS, record_size=100)
    for p in range(STALLED_TASKS):
        for b in range(BATCHES):
            produce_batch(cluster.bootstrap, stalled, p, _header_heavy_batch(b * PER_BATCH))

    sink = BufferingSink(cluster, stalled)
    sink.mark("any", "stall", keep=True)
    victim_cfg = share_config(cluster, victim, victim, FILE_SINK, 1, file=str(victim_out))
    victim_cfg.update({"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER})
    stalled_cfg = share_config(cluster, stalled, stalled, BUFFERING_SINK, STALLED_TASKS)
    stalled_cfg.update(sink.settings())
    stalled_cfg.update({"share.consumer.share.buffer.max.bytes": str(16 * MIB),
                        "share.consumer.fetch.max.bytes": str(8 * MIB)})
    fig = {"worker_bound_mib": WORKER_BOUND // MIB, "stalled_tasks": STALLED_TASKS}
    try:
        start_connector(worker, victim, victim_cfg, tasks=1)
        Progress("victim records in the file", lambda: file_line_count(victim_out)).wait(
            50_000, stall=90, timeout=300, on_timeout=lambda: connector_trace(worker, victim))
        control = _rate(victim_out, PHASE_S)
        fig["victim_rate_control"] = round(control)

        start_connector(worker, stalled, stalled_cfg, tasks=STALLED_TASKS)
        held = wait_for(
            "the stalled tenant holding half the worker's bound",
            lambda: (m if (m := total(scrape(port), MEMORY, stalled)) >= WORKER_BOUND / 2
                     else None),
            timeout=120, interval=0.5,
            on_timeout=lambda: (f"it holds {total(scrape(port), MEMORY, stalled) / MIB:.1f} MiB\n"
                                + sink.trace_tail() + connector_trace(worker, stalled)))
        fig["stalled_held_mib"] = round(held / MIB, 1)

        rates = [_rate(victim_out, PHASE_S)]
        if rates[0] < 0.8 * control:
            # One more window before judging: the machine is shared and a phase's rate varies
            # by about a tenth; a victim the pool stops delivers nothing at all.
            rates.append(_rate(victim_out, PHASE_S))
        series = scrape(port)
        fig.update(victim_rates_stalled=[round(r) for r in rates],
                   ratio=round(max(rates) / control, 2),
                   stalled_held_after_mib=round(total(series, MEMORY, stalled) / MIB, 1),
                   victim_released_for_memory=total(series, RELEASED_FOR_MEMORY, victim))
        record_figures("32-fair-memory", **fig)

        assert file_line_count(victim_out) < VICTIM_RECORDS, \
            "the victim's backlog ran out: the rates say nothing"
        assert total(series, MEMORY, stalled) >= WORKER_BOUND / 2, \
            f"the stalled tenant let go of its memory meanwhile: {fig}"
        assert total(series, RELEASED_FOR_MEMORY, victim) == 0, fig
        assert max(rates) >= 0.8 * control, \
            f"victim {control:.0f} records/s alone, {rates} beside the stalled tenant: {fig}"
        assert len(series.get(MEMORY, [])) >= STALLED_TASKS + 1, "a task without the gauge"
    finally:
        sink.unmark("any", "stall")
        delete_connector(worker, stalled)
        delete_connector(worker, victim)
        victim_out.unlink(missing_ok=True)
