"""Scenario 7: SMTs, predicates and a header converter give the same sink output through
sharesink as through the classic sink runtime.

Two connectors on the same worker read the same two topics with the same settings: a plain
`FileStreamSinkConnector` (classic runtime, consumer group) and a ShareSinkConnector running it.
The chain: Filter (predicate HasHeaderKey `skip`), InsertField `tag` only for topic A
(predicate TopicNameMatches), RegexRouter (topic renamed) and InsertField `topic` (makes the
routed topic visible in the file). The header converter is the JsonConverter: FileStream writes
values only, so its effect is made visible through `errors.tolerance=all`: records whose `prio`
header is not JSON fail header conversion and are skipped by both runtimes. The two files must
hold the same lines (as multisets).
"""

from __future__ import annotations

from collections import Counter

from harness.cluster import Cluster, Rest
from helpers import (FILE_SINK, JSON_CONVERTER, STRING_CONVERTER, SHARE_SINK, Progress,
                     connector_trace, delete_connector, file_line_count, file_lines,
                     produce_values, record_figures, start_connector, uniq)

PER_TOPIC = 1000


def _chain(topic_a_regex: str, route_regex: str) -> dict:
    return {
        "key.converter": STRING_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "false",
        "header.converter": JSON_CONVERTER,
        "header.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "transforms": "dropSkipped,tagA,route,topicField",
        "transforms.dropSkipped.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.dropSkipped.predicate": "hasSkip",
        "transforms.tagA.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.tagA.static.field": "tag",
        "transforms.tagA.static.value": "from-a",
        "transforms.tagA.predicate": "isA",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": route_regex,
        "transforms.route.replacement": "routed-$1",
        "transforms.topicField.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.topicField.topic.field": "topic",
        "predicates": "hasSkip,isA",
        "predicates.hasSkip.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        "predicates.hasSkip.name": "skip",
        "predicates.isA.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.isA.pattern": topic_a_regex,
    }


def test_smt_output_equals_the_classic_runtime(cluster: Cluster, worker: Rest):
    base = uniq("smt")
    topic_a, topic_b = f"{base}a", f"{base}b"
    for t in (topic_a, topic_b):
        cluster.create_topic(t, partitions=2)
    expected = 0   # records neither skipped (header 'skip') nor with a header that is not JSON
    for t in (topic_a, topic_b):
        values, headers = [], []
        for i in range(PER_TOPIC):
            values.append(f'{{"n":{i},"src":"{t}"}}')
            h = {"prio": str(i % 5) if i % 7 != 5 else "{not json"}
            if i % 10 == 3:
                h["skip"] = "true"
            elif i % 7 != 5:
                expected += 1
            headers.append(h)
        produce_values(cluster, t, values, keys=[f"k{i}" for i in range(PER_TOPIC)], headers=headers)

    chain = _chain(topic_a_regex=f"{topic_a}", route_regex=f"{base}(.)")
    classic_name, share_name = f"{base}-classic", f"{base}-share"
    classic_out = cluster.state_dir / f"{classic_name}.out"
    share_out = cluster.state_dir / f"{share_name}.out"
    classic = {"connector.class": FILE_SINK, "topics": f"{topic_a},{topic_b}", "tasks.max": "2",
               "file": str(classic_out), **chain}
    share = {"connector.class": SHARE_SINK, "share.sink.connector.class": FILE_SINK,
             "share.consumer.bootstrap.servers": cluster.bootstrap,
             "topics": f"{topic_a},{topic_b}", "tasks.max": "2", "file": str(share_out), **chain}
    try:
        start_connector(worker, classic_name, classic, tasks=2)
        start_connector(worker, share_name, share, tasks=2)
        Progress("classic runtime lines", lambda: file_line_count(classic_out)).wait(
            expected, stall=90, on_timeout=lambda: connector_trace(worker, classic_name))
        Progress("sharesink lines", lambda: file_line_count(share_out)).wait(
            expected, stall=90, on_timeout=lambda: connector_trace(worker, share_name))
        import time
        time.sleep(3)
        c_lines, s_lines = file_lines(classic_out), file_lines(share_out)
        c, s = Counter(c_lines), Counter(s_lines)
        only_classic, only_share = c - s, s - c
        record_figures("7-smt-vs-classic", produced=2 * PER_TOPIC, expected_after_filter=expected,
                       delivered=len(s_lines), classic_delivered=len(c_lines),
                       duplicated=len(s_lines) - len(set(s_lines)),
                       lost=expected - len(set(s_lines) & set(c_lines)),
                       lines_only_in_classic=sum(only_classic.values()),
                       lines_only_in_share=sum(only_share.values()),
                       example_line=s_lines[0] if s_lines else None)
        assert len(c_lines) == expected, "the classic runtime itself did not produce the expected lines"
        assert any("routed-a" in l and "from-a" in l for l in c_lines), c_lines[:3]
        assert not only_classic and not only_share, (
            f"outputs differ: only classic {list(only_classic)[:5]}, only share {list(only_share)[:5]}")
    finally:
        delete_connector(worker, share_name)
        delete_connector(worker, classic_name)
