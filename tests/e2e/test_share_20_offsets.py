"""Scenario 20: Connect's offsets endpoints (KIP-875) on a share-mode connector.

To the runtime a share-mode connector is a source connector without source offsets, so on its
own it answers `GET /connectors/{c}/offsets` with an empty list and `PATCH`/`DELETE` with a 200
that changes nothing: an operator resetting the connector would believe it was reset. With
sharesink's REST extension (the harness enables it on worker 0) the endpoints mean for the share
group what they mean for a sink's consumer group, in Connect's own JSON:

- `GET` shows the share group's start offset per partition (it follows the acknowledgements);
- `PATCH` and `DELETE` are refused (400, naming STOPPED) while the connector runs;
- stopped, `PATCH` sets a start offset, and after a resume the records from there are delivered
  again; `DELETE` resets to `share.auto.offset.reset` (earliest), and every record is delivered
  again. Both forms (the KIP's flag and the explicit `ShareSinkConnector`) behave the same.
"""

from __future__ import annotations

import urllib.parse

import pytest

from harness.cluster import Cluster, Rest, RestError
from helpers import (FILE_SINK, STRING_CONVERTER, connector_trace, delete_connector, file_lines,
                     flag_config, produce_values, record_figures, share_config, start_connector,
                     stop_connector, uniq, wait_for)

N = 200


def _offsets(rest: Rest, name: str) -> dict:
    body = rest.get(f"/connectors/{urllib.parse.quote(name, safe='')}/offsets")
    return {(o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]):
            o["offset"]["kafka_offset"] for o in body["offsets"]}


def _patch(rest: Rest, name: str, topic: str, offset) -> dict:
    body = {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0},
                         "offset": None if offset is None else {"kafka_offset": offset}}]}
    return rest.patch(f"/connectors/{urllib.parse.quote(name, safe='')}/offsets", body)


def _resume(rest: Rest, name: str) -> None:
    rest._retry_busy(lambda: rest.put(f"/connectors/{urllib.parse.quote(name, safe='')}/resume"))


@pytest.mark.parametrize("form", ["flag", "explicit"])
def test_offsets_endpoints_read_and_set_the_share_groups_start_offsets(cluster: Cluster,
                                                                        worker: Rest, form: str):
    name = uniq(f"offsets-{form}-")
    topic = name
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(topic, partitions=1)
    values = [f"{name}-v{i:04d}" for i in range(N)]
    produce_values(cluster, topic, values)
    extra = {"file": str(out), "key.converter": STRING_CONVERTER,
             "value.converter": STRING_CONVERTER, "share.commit.interval.ms": "500"}
    if form == "flag":
        cfg = flag_config(name, topic, FILE_SINK, 2, **extra)
    else:
        cfg = share_config(cluster, name, topic, FILE_SINK, 2, **extra)
    try:
        start_connector(worker, name, cfg, tasks=2)
        wait_for("every record in the file", lambda: len(set(file_lines(out))) == N,
                 timeout=90, on_timeout=lambda: connector_trace(worker, name))
        # GET follows the acknowledgements to the end of the partition.
        wait_for("the start offset at the end", lambda: _offsets(worker, name) == {(topic, 0): N},
                 timeout=60, on_timeout=lambda: str(worker.get(f"/connectors/{name}/offsets")))

        with pytest.raises(RestError) as running:
            _patch(worker, name, topic, 10)
        assert running.value.status == 400 and "STOPPED" in str(running.value.body), running.value
        with pytest.raises(RestError) as running:
            worker.delete(f"/connectors/{urllib.parse.quote(name, safe='')}/offsets")
        assert running.value.status == 400, running.value

        stop_connector(worker, name)
        # The stopped tasks leave the group within moments; until then the broker refuses (409).
        answer = wait_for("the PATCH once the group is empty",
                          lambda: _try(lambda: _patch(worker, name, topic, N - 50)), timeout=60)
        assert "altered successfully" in answer["message"], answer
        assert _offsets(worker, name) == {(topic, 0): N - 50}
        lines_before = len(file_lines(out))
        _resume(worker, name)
        wait_for("the last 50 records delivered again",
                 lambda: len(file_lines(out)) >= lines_before + 50, timeout=90,
                 on_timeout=lambda: connector_trace(worker, name))
        again = file_lines(out)[lines_before:]
        assert sorted(again) == values[N - 50:], again[:5]

        stop_connector(worker, name)
        answer = wait_for("the DELETE once the group is empty",
                          lambda: _try(lambda: worker.delete(
                              f"/connectors/{urllib.parse.quote(name, safe='')}/offsets")),
                          timeout=60)
        assert "reset successfully" in answer["message"], answer
        assert _offsets(worker, name) == {(topic, 0): 0}
        lines_before = len(file_lines(out))
        _resume(worker, name)
        wait_for("every record delivered again after the reset",
                 lambda: len(file_lines(out)) >= lines_before + N, timeout=90,
                 on_timeout=lambda: connector_trace(worker, name))
        assert sorted(file_lines(out)[lines_before:]) == values
        record_figures(f"20-offsets-{form}", produced=N, delivered=len(file_lines(out)),
                       duplicated=len(file_lines(out)) - N, lost=0,
                       note="duplicates are the records PATCH and DELETE asked for again")
    finally:
        delete_connector(worker, name)


def _try(call):
    """The call's answer, or None while the broker still counts the stopped tasks as members."""
    try:
        return call()
    except RestError as e:
        if e.status == 409:
            return None
        raise
