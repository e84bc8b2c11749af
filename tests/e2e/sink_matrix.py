"""The sink compatibility matrix: which third-party sink connectors sharesink is proven with, at
which version, against which backend, how, and with what result. One `Row` per sink; the e2e
test (test_sink_matrix.py) runs the rows, and docs/compatibility.md is generated from them
(`python3 tests/e2e/sink_matrix.py --write`; test_compatibility_doc.py fails when it is stale).

Versions are the ones the harness resolves (tests/harness/artifacts.py): the Maven Central that
this project's machines reach does not serve every artifact, and where the version wanted is not
served the row names the one used and why.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "compatibility.md"

CAMEL_SINK = "org.apache.camel.kafkaconnector.CamelSinkConnector"
DEBEZIUM_JDBC = "io.debezium.connector.jdbc.JdbcSinkConnector"
MONGODB_SINK = "com.mongodb.kafka.connect.MongoSinkConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
ICEBERG_SINK = "org.apache.iceberg.connect.IcebergSinkConnector"

CAMEL_VERSION = ("Camel Kafka Connector 0.11.0 (generic `CamelSinkConnector`, Camel 3.11.1 "
                 "components); 4.18.x is not served here, nor any per-component connector")

# Backends: Debian 12 packages the harness installs (tests/harness/backends.py, postgres.py).
MOSQUITTO = "Mosquitto 2.0.11 (Debian `mosquitto`)"
NATS = "NATS server 2.9.10 (Debian `nats-server`)"
MARIADB = "MariaDB 10.11 (Debian `mariadb-server`)"
POSTGRES = "PostgreSQL 15 (Debian `postgresql`)"
HTTP = "an HTTP server of the test's own (Python standard library)"

E2E = ("e2e: share mode, 4 tasks per partition; a worker killed with kill -9 and the backend "
       "restarted mid-stream (some but not all records written at each, asserted); every record "
       "counted by id at the backend; the classic runtime side by side on the same data")
APPEND = "safe as it is: one new message or row per record, in any order"
PASSES = "passes: every record at the backend, share mode and classic runtime"


@dataclass(frozen=True)
class Row:
    key: str                 # the test's id
    sink: str                # what it is called
    connector_class: str
    version: str             # the version used here
    backend: str
    tested: str              # how it is tested
    order_class: str         # what share mode does to it (docs/configuration.md, "Order in share mode")
    result: str              # what the tests assert
    # SinkTaskContext methods the sink calls (read in its source, seen at run time by sharesink's
    # count of the calls, ContextCalls): the e2e test checks the count against this.
    context_calls: Tuple[str, ...] = ()
    source: str = ""         # where its put/flush/preCommit and context calls were read
    run: bool = True         # an e2e row of test_sink_matrix.py (else validation or elsewhere)
    # Why the sink itself may lose, under either runtime, records it writes while its backend
    # stops: the e2e test then allows missing records only among those produced around the
    # backend's restart, for both runtimes alike ("" = none may be missing).
    restart_loss: str = ""


CAMEL_SOURCE = ("apache/camel-kafka-connector, tag camel-kafka-connector-0.11.0: "
                "core/src/main/java/org/apache/camel/kafkaconnector/CamelSinkTask.java (writes each "
                "record synchronously in put through a ProducerTemplate; no flush or preCommit of its "
                "own; asks errantRecordReporter() in start and, without one, throws on a failed "
                "exchange)")

ROWS: List[Row] = [
    Row("camel-mqtt", "Camel MQTT sink (`paho:` endpoint, MQTT 3.1.1, QoS 1)", CAMEL_SINK,
        CAMEL_VERSION, MOSQUITTO, E2E,
        "publishes in any order: safe when subscribers do not depend on order", PASSES,
        ("errantRecordReporter()",), CAMEL_SOURCE),
    Row("camel-mqtt5", "Camel MQTT 5 sink (`paho-mqtt5:` endpoint, QoS 1)", CAMEL_SINK,
        CAMEL_VERSION, MOSQUITTO, E2E,
        "publishes in any order: safe when subscribers do not depend on order", PASSES,
        ("errantRecordReporter()",), CAMEL_SOURCE),
    Row("camel-nats", "Camel NATS sink (`nats:` endpoint, flushed publish)", CAMEL_SINK,
        CAMEL_VERSION, NATS, E2E,
        "publishes in any order: safe when subscribers do not depend on order",
        "passes: every record at the backend, share mode and classic runtime, except records "
        "the sink publishes as the NATS server stops, which either runtime can lose (the "
        "sink's own limit, below)",
        ("errantRecordReporter()",), CAMEL_SOURCE,
        restart_loss="a core-NATS publish whose flush returned can still be missing after the "
        "server stops (jnats 2.11.5's `flush` returns normally when its PING cannot be sent on a "
        "lost connection, and core NATS has no acknowledgement of its own). Seen at the "
        "server's stop only: in one CI run the 10 records of one batch under sharesink, whose "
        "puts returned without error (the classic runtime's copy of that batch failed its "
        "flush and was sent again); with jnats alone, publish then flush as the Camel producer "
        "does, 1 of 6,000 ids across 12 restarts"),
    Row("camel-http", "Camel HTTP sink (`http:` endpoint, POST)", CAMEL_SINK, CAMEL_VERSION, HTTP,
        E2E, "one request per record, in any order: safe when the service does not depend on order",
        PASSES, ("errantRecordReporter()",), CAMEL_SOURCE),
    Row("camel-sql", "Camel SQL sink (`sql:` endpoint, an INSERT)", CAMEL_SINK, CAMEL_VERSION,
        MARIADB, E2E,
        APPEND + "; an upsert, UPDATE or DELETE query is refused until `share.ordering` chooses "
        "(KnownSinks)", PASSES, ("errantRecordReporter()",), CAMEL_SOURCE),
    Row("debezium-jdbc-mariadb", "Debezium JDBC sink into MariaDB (`insert.mode=insert`)",
        DEBEZIUM_JDBC, "3.6.0.Final (3.6.1.Final is not served here)", MARIADB, E2E,
        APPEND + "; `upsert`, `update`, `delete.enabled`, `truncate.enabled` are refused until "
        "`share.ordering` chooses (KnownSinks)", PASSES, (),
        "debezium/debezium: debezium-connector-jdbc/src/main/java/io/debezium/connector/jdbc/"
        "JdbcSinkConnectorTask.java (writes in put; preCommit returns its own offsets for open "
        "partitions; 3.6.0 makes no SinkTaskContext call, seen at run time: newer sources ask for "
        "the reporter through ErrorReporters.fromContext)"),
    # Elsewhere in the e2e suite, listed so the page has every sink tested.
    Row("filestream", "Kafka FileStream sink", FILE_SINK, "connect-file 4.3.1 (4.4.0 is not served here)",
        "a local file", "e2e: test_share_01_filestream.py (8 tasks on 3 partitions), "
        "test_wiring.py's migration from the classic runtime", APPEND, PASSES, (), "", run=False),
    Row("debezium-jdbc-postgres", "Debezium JDBC sink into PostgreSQL", DEBEZIUM_JDBC,
        "3.6.0.Final (3.6.1.Final is not served here)", POSTGRES,
        "e2e: test_share_02_jdbc_outage.py (60 s outage), test_share_03_failover.py (kill -9), "
        "test_share_18_ordering.py (upserts)",
        "`insert.mode=insert`: " + APPEND + "; upserts: refused until `share.ordering` chooses, "
        "safe with the offset guard", PASSES, (), "", run=False),
    # No server in Debian 12: validation only.
    Row("mongodb", "MongoDB sink (MongoDB's official)", MONGODB_SINK, "2.0.1 (`-all` jar)",
        "none: no MongoDB server in Debian 12", "validation (test_sink_matrix.py): refused with "
        "ids from the record (`document.id.strategy` provided in key or value), "
        "`delete.on.null.values=true` or a CDC handler; accepted with generated ids",
        "order-sensitive with ids from the record (replaces by `_id`), safe with generated ids",
        "refused with its reason; accepted when safe", (), "", run=False),
    Row("iceberg", "Apache Iceberg sink", ICEBERG_SINK, "1.10.0",
        "none (validation only)", "validation: test_share_18_ordering.py",
        "commits its own offsets", "refused whatever `share.ordering` says", (), "", run=False),
]

BEGIN = "<!-- BEGIN GENERATED: sink_matrix.ROWS (python3 tests/e2e/sink_matrix.py --write); do not edit -->"
END = "<!-- END GENERATED: sink_matrix.ROWS -->"


def markdown() -> str:
    out = ["| sink | connector class | version | backend | how tested | order class | result | "
           "SinkTaskContext calls |",
           "|---|---|---|---|---|---|---|---|"]
    for r in ROWS:
        calls = ", ".join(f"`{c}`" for c in r.context_calls) if r.run else "(not recorded)"
        if r.run and not r.context_calls:
            calls = "none"
        cells = [r.sink, f"`{r.connector_class}`", r.version, r.backend, r.tested, r.order_class,
                 r.result, calls]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    limits = [r for r in ROWS if r.restart_loss]
    if limits:
        out.append("")
        out.append("A sink's own limit, under either runtime (the e2e test allows these records "
                   "missing, and only those: records produced from the batch before the backend's "
                   "stop to its restart; any other missing record fails the row):")
        out.append("")
        out.extend(f"- {r.sink}: {r.restart_loss}." for r in limits)
    return "\n".join(out) + "\n"


def replace_generated(document: str, generated: str) -> str:
    begin, end = document.index(BEGIN), document.index(END)
    return document[:begin + len(BEGIN)] + "\n\n" + generated + "\n" + document[end:]


def rows_to_run() -> List[Row]:
    return [r for r in ROWS if r.run]


def by_key() -> Dict[str, Row]:
    return {r.key: r for r in ROWS}


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOC.write_text(replace_generated(DOC.read_text(), markdown()))
    else:
        sys.stdout.write(markdown())
