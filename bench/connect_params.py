"""The Connect benchmark's scenarios in figures: the sinks and converters it runs, each scenario's
rates, fractions and goals. Read by bench/connect.py, which runs the scenarios, and by
bench/connect_figures.py, which turns their results into the report's figures."""

from __future__ import annotations

from pathlib import Path

SHARE_SINK = "io.sharesink.connect.ShareSinkConnector"
JDBC_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"

ROW_SLEEP = 0.02

# (d): the brokers' cost is counted from this fraction of the records on (bench/cost.py). Each run
# is a fresh connector: what its start sets compiling on the brokers (the group, its configs, the
# tasks joining) ran 20-60% of their CPU in the first runs' JIT compiler threads, a cost a
# long-lived connector pays once.
STEADY_FROM = 1 / 3

# (d') and (b'): the group's record-lock window at Kafka's default (2000 records per
# share-partition, group.share.partition.max.record.locks), what sharesink ran with before its
# default became the broker's group maximum (4000, group.share.max.partition.max.record.locks).
# share.commit.max.records follows as half of the window.
KAFKA_DEFAULT_WINDOW = {"share.partition.max.record.locks": "2000"}

# (d''): the acknowledgements ride on the next ShareFetch even when the windows are full, as a
# consumer's implicit ones do, instead of going first on a ShareAcknowledge of their own (the
# engine's default, share.fetch.acknowledge.first=true): fewer requests, against fetches the
# broker parks until their wait ends. A share-consumer setting, so it passes the worker's
# override policy (the bench's worker has Kafka's default, All).
ACK_ON_FETCH = {"share.consumer.share.fetch.acknowledge.first": "false"}

# (dt): the fast sink of (d) on a topic written in transactions (bench_txn), every runtime reading
# only committed records, as exactly-once producers' readers do. Classic asks its consumer through
# the worker's override policy; sharesink asks its share consumer, and the connector sets the
# group's share.isolation.level from it (issue 54). A share consumer alone gets the group setting.
READ_COMMITTED_CLASSIC = {"consumer.override.isolation.level": "read_committed"}
READ_COMMITTED_SHARE = {"share.consumer.isolation.level": "read_committed"}
READ_COMMITTED_GROUP = {"share.isolation.level": "read_committed"}
# (dt') with fixed-size fetches: every ShareFetch asks for fetch.max.bytes (2 MiB) instead of the
# bytes its max.poll.records take at the size the records had (the engine's default). The broker
# walks every log batch a fetch reads (under read_committed, also for aborted transactions), so
# this is what sizing the fetch saves. (Folding the markers into the records' acknowledgements,
# which this row measured before, made no difference: 1.02, bench/report/profiles.md.)
FIXED_FETCH_BYTES = {"share.consumer.share.fetch.bytes.adaptive": "false"}
# (dt): how bench_txn is written (bench/peers/txn-producer): transactions of this many records,
# transaction t aborted when t % TXN_ABORT_EVERY == TXN_ABORT_EVERY - 1 (one in ten)
TXN_PER_TRANSACTION = 100
TXN_ABORT_EVERY = 10
TXN_PARTITIONS = 3
TXN_PRODUCER = Path(__file__).resolve().parent / "peers" / "txn-producer" / "TxnProducer.java"

# (e) latency: fixed produce rates as fractions of what the classic runtime made in this run's
# (d) (fast sink) and (a) (slow sink, one below and one beyond what classic sustains).
LAT_FAST_FRACTIONS = (0.25, 0.5, 0.75)
LAT_SLOW_FRACTIONS = (0.5, 1.5)
# (e) classic's sustained fast-sink rate: the producer asked for 4 x (d) classic for a quarter of
# this many seconds, i.e. (d) classic x this many records, sent flat out
SUSTAINED_RECORDS_S = 5
SCALE_RECORDS_PER_PUT = 10  # (f): records per put
# (g) autoscaling: the slow sink of (a) under a burst then a trickle, tasks between these two
AUTOSCALE_MIN, AUTOSCALE_MAX = 2, 12
AUTOSCALE_TRICKLE = 20.0   # rows/s before, during and after the burst (two tasks carry ~90/s)
AUTOSCALE_BURST_RATE = 20_000.0  # the burst is sent flat out at up to this rate
AUTOSCALE_GOAL_DRAIN = 1.15      # autoscaled drain time <= this x the fixed maximum's
AUTOSCALE_GOAL_TASK_S = 0.6      # autoscaled task-seconds <= this x the fixed maximum's
LAT_SAMPLE = 20           # the fast sink: one line in 20 is timed (its bytes read at fixed offsets)
LAT_LINE = 27             # RateProducer's plain value "%016d %09d" plus the newline
RATE_PRODUCER = Path(__file__).resolve().parent / "peers" / "rate-producer" / "RateProducer.java"
