"""Scenario 4: poison records (values that are not JSON, for a JsonConverter) through sharesink
with Kafka's FileStream sink.

- `errors.tolerance=all` with a dead letter queue `dlq.<name>` and context headers: every poison
  record is in the DLQ topic with its payload and error headers (Connect's `__connect.errors.*`
  or the broker's KIP-1191 `__dlq.errors.*`), every good record is in the file once;
- `errors.tolerance=none`: the task FAILs with a message naming the topic, the partition and the
  offset of the poison record, and the adapter drops nothing: the poison record is not ACCEPTed
  (Kafka's own share consumer still gets it from the group afterwards) and every good record is
  either in the file or still in the group.
"""

from __future__ import annotations

import re
import time

import pytest

from harness.cluster import Cluster, Rest
from helpers import (FILE_SINK, consume_with_headers, JSON_CONVERTER, STRING_CONVERTER, Progress,
                     connector_trace, count_figures, delete_connector, failed_task_trace, file_line_count,
                     file_lines, group_of, produce_values, record_figures, share_config,
                     share_console_consume, start_connector, uniq, wait_for)

GOOD = 3000
POISON_EVERY = 300  # 10 poison records


def _converters(cfg):
    cfg.update({"key.converter": STRING_CONVERTER, "value.converter": JSON_CONVERTER,
                "value.converter.schemas.enable": "false", "share.commit.interval.ms": "1000"})


# How the DLQ is reached: the default (share.dlq.mode=auto: the broker's KIP-1191 DLQ on 4.4)
# with no DLQ topic yet, as an operator moving from the classic runtime would configure it (the
# classic runtime creates its DLQ topic); the same with the topic created beforehand as KIP-1191
# asks (errors.deadletterqueue.group.enable=true); and Connect's own DLQ written by the adapter.
DLQ_CASES = {
    "auto-no-topic": ({}, None),
    "auto-topic-created": ({}, {"errors.deadletterqueue.group.enable": "true"}),
    "connect": ({"share.dlq.mode": "connect"}, None),
}


@pytest.mark.parametrize("case", list(DLQ_CASES))
def test_poison_records_go_to_the_dlq_with_tolerance_all(cluster: Cluster, worker: Rest, case):
    extra_cfg, precreate = DLQ_CASES[case]
    name = uniq("poison-all-")
    topic = name
    dlq = f"dlq.{name}"
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=3)
    if precreate is not None:
        cluster.create_topic(dlq, partitions=1, config=precreate)
    values, expected_lines, poison = [], [], []
    for i in range(GOOD):
        if i % POISON_EVERY == POISON_EVERY // 2:
            p = f"poison-{name}-{i} {{not json"
            poison.append(p)
            values.append(p)
        values.append(f'{{"n":{i}}}')
        expected_lines.append(f"{{n={i}}}")   # FileStream writes the converted Map's toString()
    produce_values(cluster, topic, values, keys=[f"k{i}" for i in range(len(values))])

    cfg = share_config(cluster, name, topic, FILE_SINK, 3, file=str(out))
    _converters(cfg)
    cfg.update({"errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
                "errors.log.enable": "true", **extra_cfg})
    try:
        start_connector(worker, name, cfg, tasks=3)
        Progress("good records in the file", lambda: file_line_count(out)).wait(
            GOOD, stall=90, timeout=600, on_timeout=lambda: connector_trace(worker, name))

        dlq_lines = []

        def dlq_complete():
            if dlq not in cluster.list_topics():
                return False
            # Every record the DLQ holds, duplicates too, and no more: the console consumer
            # then ends at once instead of waiting out its timeout for records that never come.
            held = sum(cluster.end_offsets(dlq).values())
            if held < len(poison):
                return False
            dlq_lines[:] = consume_with_headers(cluster, dlq, held)
            return len(dlq_lines) >= len(poison)

        wait_for(f"{len(poison)} records in {dlq}", dlq_complete, timeout=120, interval=2,
                 on_timeout=lambda: f"DLQ has {dlq_lines}\n" + connector_trace(worker, name)
                 + "\nbroker log:\n" + _broker_lines(cluster, dlq))
        time.sleep(2)
        got = file_lines(out)
        figs = count_figures(expected_lines, got)
        dlq_payloads = [v for _, v in dlq_lines]
        dlq_headers = [h for h, _ in dlq_lines]
        missing_in_dlq = [p for p in poison if p not in dlq_payloads]
        record_figures(f"4a-poison-tolerance-all-{case}", produced=len(values), good=GOOD,
                       poison=len(poison), **{k: v for k, v in figs.items() if k != "produced"},
                       dlq_records=len(dlq_lines), poison_missing_from_dlq=len(missing_in_dlq),
                       dlq_header_keys=sorted(dlq_headers[0]) if dlq_headers else None)
        assert figs["lost"] == 0, f"{figs['lost']} good records missing from the file"
        assert figs["unexpected"] == 0, f"unexpected lines: {set(got) - set(expected_lines)}"
        assert not missing_in_dlq, f"poison records not in the DLQ with their payload: {missing_in_dlq}"
        for h in dlq_headers:
            src = h.get("__connect.errors.topic", h.get("__dlq.errors.topic"))
            assert src == topic, f"the DLQ headers do not name the source topic: {h}"
            offset = h.get("__connect.errors.offset", h.get("__dlq.errors.offset"))
            assert offset is not None and offset.isdigit(), f"no source offset header: {h}"
        assert len(dlq_lines) >= len(poison)
        assert failed_task_trace(worker, name) is None
    finally:
        delete_connector(worker, name)


def test_poison_record_fails_the_task_with_tolerance_none(cluster: Cluster, worker: Rest):
    name = uniq("poison-none-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=1)
    before, after = 200, 200
    poison = f"poison-{name} {{not json"
    values = [f'{{"n":{i}}}' for i in range(before)] + [poison] + \
             [f'{{"n":{i}}}' for i in range(before, before + after)]
    poison_offset = before
    produce_values(cluster, topic, values)
    good_lines = [f"{{n={i}}}" for i in range(before + after)]

    cfg = share_config(cluster, name, topic, FILE_SINK, 1, file=str(out))
    _converters(cfg)
    cfg["errors.tolerance"] = "none"
    group = group_of(name)
    try:
        worker.put_connector(name, cfg)
        trace = wait_for("the task to FAIL on the poison record",
                         lambda: failed_task_trace(worker, name), timeout=180, interval=1,
                         on_timeout=lambda: connector_trace(worker, name))
        print(f"\nFAILED trace (head): {trace[:600]}")
        head = trace[:4000]
        assert topic in head, f"the failure does not name the topic {topic}: {head}"
        assert re.search(rf"\b{poison_offset}\b", head), \
            f"the failure does not name offset {poison_offset}: {head}"
        assert re.search(rf"(partition\W*0\b|{re.escape(topic)}-0\b)", head, re.I), \
            f"the failure does not name partition 0: {head}"
        time.sleep(2)
        written = file_lines(out)
        delete_connector(worker, name)
        time.sleep(2)
        # What the adapter did not ACCEPT is still in the share group: Kafka's console share
        # consumer gets it (and ACCEPTs it).
        left = share_console_consume(cluster, topic, group, len(values), timeout_ms=15000)
        seen = set(written) | {_as_line(v) for v in left}
        lost_good = [l for l in good_lines if l not in seen]
        record_figures("4b-poison-tolerance-none", produced=len(values), good=len(good_lines),
                       poison=1, delivered=len(written), left_in_group=len(left),
                       poison_left_in_group=int(poison in left), lost=len(lost_good),
                       duplicated=len(written) - len(set(written)))
        assert poison in left, ("the poison record is no longer in the share group "
                                "(ACCEPTed or archived by the adapter)")
        assert not lost_good, f"{len(lost_good)} good records neither written nor in the group"
    finally:
        delete_connector(worker, name)


def test_a_dlq_topic_the_broker_cannot_create_fails_the_task_naming_the_key(cluster: Cluster,
                                                                            worker: Rest):
    """Connect's own DLQ (share.dlq.mode=connect) with no DLQ topic and Connect's default
    replication factor of 3 on this one broker: as in the classic runtime, the task cannot create
    its DLQ topic and fails at start; its trace names the key to change. Nothing is consumed."""
    name = uniq("dlq-rf-")
    topic = name
    dlq = f"dlq.{name}"
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=1)
    produce_values(cluster, topic, [f'{{"n":{i}}}' for i in range(20)])
    cfg = share_config(cluster, name, topic, FILE_SINK, 1, file=str(out))
    _converters(cfg)
    cfg.update({"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                "share.dlq.mode": "connect"})
    try:
        worker.put_connector(name, cfg)
        trace = wait_for("the task to FAIL at start", lambda: failed_task_trace(worker, name),
                         timeout=120, interval=1, on_timeout=lambda: connector_trace(worker, name))
        print(f"\nFAILED trace (head): {trace[:400]}")
        assert "errors.deadletterqueue.topic.replication.factor=3" in trace[:4000], trace[:4000]
        assert dlq in trace[:4000], trace[:4000]
        assert file_line_count(out) == 0, "records were put before the DLQ was ready"
    finally:
        delete_connector(worker, name)


def _as_line(v: str) -> str:
    m = re.fullmatch(r'\{"n":(\d+)\}', v)
    return f"{{n={m.group(1)}}}" if m else v


def _broker_lines(cluster: Cluster, needle: str, limit: int = 3) -> str:
    p = cluster.logs_dir / "broker.log"
    lines = [l for l in p.read_text(errors="replace").splitlines() if needle in l and
             ("Exception" in l or "ERROR" in l or "WARN" in l)] if p.exists() else []
    return "\n".join(lines[:limit]) or "(nothing about it)"
