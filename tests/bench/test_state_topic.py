"""bench/state_topic.py: DumpLogSegments lines of `__share_group_state` to per-group figures
(lines as Kafka 4.4's tool prints them; no broker)."""

from __future__ import annotations

import json

import state_topic

TOPIC = "Zq1bWm0yT3mQk1f0a7Uu3w"


def _line(offset: int, kind: str, group: str, partition: int, batches, start: int = -1) -> str:
    key = {"type": kind, "data": {"groupId": group, "topicId": TOPIC, "partition": partition}}
    value = {"version": "0", "data": {"snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": start,
                                      "stateBatches": [
                                          {"firstOffset": f, "lastOffset": last,
                                           "deliveryState": s, "deliveryCount": 1}
                                          for f, last, s in batches]}}
    return (f"| offset: {offset} CreateTime: 1765000000000 keySize: 60 valueSize: 40 "
            f"sequence: -1 headerKeys: [] key: {json.dumps(key)} payload: {json.dumps(value)}\n")


def test_a_record_line_is_parsed_and_everything_else_is_not():
    r = state_topic.parse_line(_line(7, "1", "bd_share_3_123", 2, [(0, 99, 2)]))
    assert r == {"type": "1", "group": "bd_share_3_123", "partition": (TOPIC, 2),
                 "value": {"snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": -1,
                           "stateBatches": [{"firstOffset": 0, "lastOffset": 99,
                                             "deliveryState": 2, "deliveryCount": 1}]}}
    assert state_topic.parse_line("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1\n") is None
    assert state_topic.parse_line("| offset: 3 key: {\"type\":\"1\"} payload: <DELETE>\n") is None


def test_the_kind_of_run_drops_its_counters():
    assert state_topic.run_kind("bd_engine_4_51234") == "bd_engine"
    assert state_topic.run_kind("engine-100-3m-2-1765000000") == "engine-100-3m"
    assert state_topic.run_kind("connect-bd_share_12_40321") == "connect-bd_share"


def test_updates_are_counted_by_the_ranges_they_carry_and_snapshots_by_those_they_hold():
    lines = [
        _line(0, "1", "g_1_7", 0, [(0, 499, 2)]),                         # one whole range
        _line(1, "1", "g_1_7", 0, [(500, 509, 2), (520, 529, 2), (600, 600, 0)]),
        _line(2, "1", "g_1_7", 1, [(0, 9, 4)]),
        _line(3, "0", "g_1_7", 0, [(520, 529, 2), (540, 549, 2)], start=510),
        _line(4, "1", "other_2_7", 0, [(0, 99, 2)]),
    ]
    groups = state_topic.summarise(filter(None, map(state_topic.parse_line, lines)))
    g = groups["g_1_7"]
    assert g["kind"] == "g" and g["partitions"] == 2
    assert (g["updates"], g["update_ranges"], g["update_ranges_max"]) == (3, 5, 3)
    assert g["records_by_state"] == {"acknowledged": 520, "available": 1, "archived": 10}
    assert g["ranges_per_update"] == 1.67 and g["records_per_range"] == 106.2
    assert g["updates_per_1000_acknowledged"] == round(3 * 1000 / 520, 3)
    assert (g["snapshots"], g["ranges_per_snapshot"], g["snapshot_ranges_max"]) == (1, 2.0, 2)
    assert groups["other_2_7"]["updates"] == 1 and groups["other_2_7"]["snapshots"] == 0
