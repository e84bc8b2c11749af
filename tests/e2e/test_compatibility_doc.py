"""docs/compatibility.md holds the table generated from the sink matrix's rows
(sink_matrix.ROWS): stale means the page no longer says what the matrix runs. No cluster."""

from __future__ import annotations

import sink_matrix
from harness.artifacts import DEBEZIUM_JDBC_VERSIONS, MAVEN_PLUGINS


def test_the_page_is_generated_from_the_matrix():
    document = sink_matrix.DOC.read_text()
    assert sink_matrix.replace_generated(document, sink_matrix.markdown()) == document, \
        "docs/compatibility.md is stale: run `python3 tests/e2e/sink_matrix.py --write`"


def test_the_versions_named_are_the_ones_the_harness_resolves():
    camel = {f"{g}:{a}": vs for g, a, vs, _ in MAVEN_PLUGINS["camel-0.11"]}
    assert camel["org.apache.camel.kafkaconnector:camel-kafka-connector"][0] == "0.11.0"
    assert camel["org.apache.camel:camel-paho"][0] == "3.11.1"
    assert "Camel Kafka Connector 0.11.0" in sink_matrix.CAMEL_VERSION
    assert "Camel 3.11.1" in sink_matrix.CAMEL_VERSION
    mongo = {f"{g}:{a}": vs for g, a, vs, _ in MAVEN_PLUGINS["mongodb"]}
    wanted = mongo["org.mongodb.kafka:mongo-kafka-connect"][0]
    assert sink_matrix.by_key()["mongodb"].version.startswith(wanted)
    for key in ("debezium-jdbc-mariadb", "debezium-jdbc-postgres"):
        assert sink_matrix.by_key()[key].version.startswith(DEBEZIUM_JDBC_VERSIONS[1])


def test_at_least_six_third_party_rows_run_against_a_backend():
    runs = sink_matrix.rows_to_run()
    assert len(runs) >= 6, [r.key for r in runs]
    assert len({r.key for r in runs}) == len(runs)
