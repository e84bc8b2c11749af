"""Scenario 30: topics written in transactions (issue 54).

A Java `KafkaProducer` with a `transactional.id` writes transactions across three partitions,
every second one aborted, with a plain producer's records written between their records
(TransactionalProducer.java). Kafka's FileStream sink reads the topic:

- classically, with `consumer.override.isolation.level=read_committed` and without it;
- in share mode, in both forms and on both engines: `read_committed` through the KIP's flag
  with `consumer.override.isolation.level` (native engine) and through the explicit form with
  `share.consumer.isolation.level` (`share.engine=java`), and without any isolation setting
  (the flag on the Java engine, the explicit form on the native one).

Each sink must write exactly what its isolation level reads: under `read_committed` every
committed and plain record and none of an aborted transaction, under `read_uncommitted`
everything. A quarter of the records are written before the connectors start, the rest while
they read, worker 0 restarting under them once they have begun to, and the classic
`read_committed` sink moved to share mode with the KIP's flag (its share group then reads at the
same level). The share-mode sinks are checked once
stopped (their tasks settled everything they polled), the classic ones once
each partition's last record (the producer writes one after everything else) is in their file,
so no record could still be on its way. Beside them, a native-engine sink that does not fold
transaction markers into its records' acknowledgements (`share.gaps.fold=false`): the broker's
share state (`__share_group_state`, read with bench/state_topic.py) must show the folding one
settling whole ranges, the other split ones.

A second test keeps a transaction open while a `read_committed` share-mode sink runs: the group
stops at the last stable offset (nothing of the open transaction, nor any record after it, is
delivered), and once the transaction commits every record arrives, none aborted.
"""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path
from typing import Dict, List, Set, Tuple

import state_topic
from harness.cluster import Cluster, Rest, default_plugin_archive
from helpers import (FILE_SINK, SHARE_FLAG, STRING_CONVERTER, LogMark, connector_trace,
                     delete_connector, file_lines, flag_config, group_of, share_config,
                     start_connector, stop_connector, uniq, wait_for)

PRODUCER = Path(__file__).resolve().parent / "TransactionalProducer.java"
PARTITIONS = 3
TASKS = 4  # more share tasks than partitions
TRANSACTIONS = 12
PER_TRANSACTION = 40
ABORT_EVERY = 2
PLAIN_PER_TRANSACTION = 6

READ_COMMITTED = "read_committed"


def produce_transactions(cluster: Cluster, topic: str, prefix: str,
                         transactions: int = TRANSACTIONS) -> Dict[str, List[str]]:
    """Writes the transactions; their values by fate: 'C' committed, 'A' aborted, 'P' plain."""
    cmd = cluster.java_cmd(str(PRODUCER), [cluster.bootstrap, topic, PARTITIONS, prefix,
                                           transactions, PER_TRANSACTION, ABORT_EVERY,
                                           PLAIN_PER_TRANSACTION], heap="256m")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"transactional producer failed: {p.stderr[-3000:]}"
    return parse_fates(p.stdout)


def parse_fates(out: str) -> Dict[str, List[str]]:
    fates: Dict[str, List[str]] = {"C": [], "A": [], "P": [], "O": []}
    for line in out.splitlines():
        fate, _, value = line.partition(" ")
        if fate in fates and value:
            fates[fate].append(value)
    return fates


def file_sink(extra: Dict[str, str], out: Path) -> Dict[str, str]:
    cfg = {"file": str(out), "key.converter": STRING_CONVERTER,
           "value.converter": STRING_CONVERTER}
    cfg.update(extra)
    return cfg


class Sink:
    """One connector writing the topic to its own file, and what it must write."""

    def __init__(self, label: str, name: str, config: Dict[str, str], committed_only: bool,
                 share: bool, out: Path):
        self.label, self.name, self.config = label, name, config
        self.committed_only, self.share, self.out = committed_only, share, out

    def expected(self, fates: Dict[str, List[str]]) -> Set[str]:
        want = set(fates["C"]) | set(fates["P"])
        if not self.committed_only:
            want |= set(fates["A"])
        return want

    def written(self) -> Set[str]:
        return set(file_lines(self.out))


def sinks_for(cluster: Cluster, topic: str, run: str) -> List[Sink]:
    def out(label: str) -> Path:
        return cluster.state_dir / f"{run}-{label}.out"

    classic = {"connector.class": FILE_SINK, "topics": topic, "tasks.max": str(PARTITIONS)}
    rc_override = {"consumer.override.isolation.level": READ_COMMITTED}
    specs: List[Tuple[str, Dict[str, str], bool, bool]] = [
        ("classic-rc", {**classic, **rc_override}, True, False),
        ("classic-ru", dict(classic), False, False),
        ("flag-rc-native", {**flag_config("", topic, FILE_SINK, TASKS), **rc_override,
                            "share.engine": "native"}, True, True),
        ("explicit-rc-java", {**share_config(cluster, "", topic, FILE_SINK, TASKS),
                              "share.consumer.isolation.level": READ_COMMITTED,
                              "share.engine": "java"}, True, True),
        ("flag-ru-java", {**flag_config("", topic, FILE_SINK, TASKS), "share.engine": "java"},
         False, True),
        ("explicit-ru-native", {**share_config(cluster, "", topic, FILE_SINK, TASKS),
                                "share.engine": "native"}, False, True),
        # the native engine without acknowledging markers with their records: the broker's
        # state shows what folding them saves
        ("explicit-ru-native-nofold", {**share_config(cluster, "", topic, FILE_SINK, TASKS),
                                       "share.engine": "native",
                                       "share.consumer.share.gaps.fold": "false"}, False, True),
    ]
    sinks = []
    for label, cfg, committed_only, share in specs:
        name = f"{run}-{label}"
        cfg = file_sink(cfg, out(label))
        cfg["name"] = name
        sinks.append(Sink(label, name, cfg, committed_only, share, out(label)))
    return sinks


def stop_and_settle(cluster: Cluster, worker: Rest, name: str, tasks: int) -> None:
    """Stops the share-mode connector `name` and waits until each of its tasks has stopped its
    share member: everything it polled is then settled and in the file, which nothing writes to
    any more."""
    log = LogMark(cluster)
    stop_connector(worker, name)
    stopped = rf"\[{re.escape(name)}\|task-\d+\] .*share member stopped"
    wait_for(f"{name}'s {tasks} tasks stopped", lambda: len(log.lines(stopped)) >= tasks,
             timeout=120, on_timeout=lambda: "\n".join(log.lines(re.escape(name))[-10:]))


def wait_written(worker: Rest, sinks: List[Sink], fates: Dict[str, List[str]],
                 timeout: float = 300) -> None:
    """Until each sink's file holds every record it must write (and perhaps more)."""
    for s in sinks:
        want = s.expected(fates)
        wait_for(f"{s.label}: every record it must write in its file",
                 lambda s=s, want=want: want <= s.written(), timeout=timeout,
                 on_timeout=lambda s=s, want=want: (
                     f"{len(want - s.written())} missing, e.g. {sorted(want - s.written())[:5]}; "
                     f"{connector_trace(worker, s.name)}"))


def test_each_form_writes_exactly_what_its_isolation_level_reads(cluster: Cluster, worker: Rest):
    run = uniq("txn-")
    topic = run
    cluster.create_topic(topic, partitions=PARTITIONS)
    fates = produce_transactions(cluster, topic, f"{run}-a")
    assert fates["A"] and fates["C"] and fates["P"], fates
    sinks = sinks_for(cluster, topic, run)
    try:
        log = LogMark(cluster)
        for s in sinks:
            start_connector(worker, s.name, s.config, tasks=None)
        wait_written(worker, sinks, fates)
        for s in sinks:
            aborted = s.written() & set(fates["A"])
            assert not (s.committed_only and aborted), \
                f"{s.label} wrote {len(aborted)} aborted records, e.g. {sorted(aborted)[:5]}"

        # The share groups read at the level each connector asked for: set where asked, Kafka's
        # default otherwise.
        for s in sinks:
            if s.share:
                level = cluster.describe_configs("groups", group_of(s.name)).get(
                    "share.isolation.level")
                assert level == (READ_COMMITTED if s.committed_only else "read_uncommitted"), \
                    (s.label, level)

        # The second half is written while the sinks read it, and worker 0 restarts under them
        # once they have begun to: records, held markers and acknowledgements are in flight.
        second: Dict[str, List[str]] = {}
        producer = threading.Thread(target=lambda: second.update(produce_transactions(
            cluster, topic, f"{run}-b", transactions=3 * TRANSACTIONS)), daemon=True)
        producer.start()
        probe = next(s for s in sinks if s.label == "flag-rc-native")
        wait_for("the second half reaching the sinks",
                 lambda: any(v.startswith(f"{run}-b-") for v in probe.written()), timeout=180)
        cluster.stop_worker(0)
        cluster.start_worker(0, plugin_archive=default_plugin_archive())
        for s in sinks:
            worker.wait_connector_running(s.name, timeout=180)
        # The classic read_committed sink moves to share mode with the KIP's flag: its share
        # group starts where the classic group stopped and reads at the same level.
        migrated = next(s for s in sinks if s.label == "classic-rc")
        migrated.config = {**migrated.config, SHARE_FLAG: "share"}
        migrated.share = True
        start_connector(worker, migrated.name, migrated.config, tasks=None)
        wait_for("the migrated sink's share group reads committed records",
                 lambda: cluster.describe_configs("groups", group_of(migrated.name)).get(
                     "share.isolation.level") == READ_COMMITTED, timeout=60)
        producer.join(300)
        assert second, "the second half's producer did not finish"
        for fate, values in second.items():
            fates[fate] += values
        wait_written(worker, sinks, fates)

        # Stopped, a share-mode sink has settled everything it polled (its tasks accept what
        # they put, release the rest): its file is final. (The group's lag is no proof here:
        # Kafka 4.3.1 left 24 of it on a share.engine=java group whose tasks had accepted every
        # record they polled, as many as the markers it acknowledged as gaps.)
        for s in sinks:
            if s.share:
                stop_and_settle(cluster, worker, s.name, int(s.config["tasks.max"]))
        for s in sinks:
            written, want = s.written(), s.expected(fates)
            aborted = written & set(fates["A"])
            if s.committed_only:
                assert not aborted, \
                    f"{s.label} wrote {len(aborted)} aborted records, e.g. {sorted(aborted)[:5]}"
            assert written == want, (
                f"{s.label}: {len(want - written)} missing, {len(written - want)} unexpected: "
                f"{sorted(written - want)[:5]}")

        # The broker took the markers folded into their records' ACCEPT: no engine fell back,
        # and its share state shows it. Each acknowledgement becomes one ShareUpdate record whose
        # state batches are the ranges it changed: a range acknowledged whole with one type is
        # one batch; a marker acknowledged apart splits its range into per-offset state.
        assert not log.lines("acknowledging markers as gaps from now on"), \
            log.lines("markers")[:5]
        groups = state_topic.summarise(state_topic.dump(cluster.state_dir))
        fold = groups[group_of(f"{run}-explicit-ru-native")]
        nofold = groups[group_of(f"{run}-explicit-ru-native-nofold")]
        print(f"\nshare state: folded {fold}\nnot folded {nofold}")
        # Under read_uncommitted only markers end archived (a Gap archives its offset). Not
        # folded, every one is; folded, only those acquired without a record beside them (their
        # transaction's records came in an earlier fetch: a range of their own, whole either way).
        markers = nofold["records_by_state"].get("archived", 0)
        assert markers > 0, nofold
        assert 2 * fold["records_by_state"].get("archived", 0) <= markers, (fold, nofold)
        assert fold["ranges_per_update"] < nofold["ranges_per_update"], (fold, nofold)
    finally:
        for s in sinks:
            delete_connector(worker, s.name)


def test_an_open_transaction_holds_the_group_until_it_commits(cluster: Cluster, worker: Rest):
    run = uniq("txn-open-")
    topic = run
    cluster.create_topic(topic, partitions=PARTITIONS)
    out = cluster.state_dir / f"{run}.out"
    cfg = file_sink({**flag_config(run, topic, FILE_SINK, TASKS),
                     "consumer.override.isolation.level": READ_COMMITTED}, out)
    cmd = cluster.java_cmd(str(PRODUCER), [cluster.bootstrap, topic, PARTITIONS, run, 4,
                                           PER_TRANSACTION, ABORT_EVERY, PLAIN_PER_TRANSACTION,
                                           30], heap="256m")
    producer = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    lines: List[str] = []
    opened = threading.Event()

    def read() -> None:
        for line in producer.stdout:
            lines.append(line.rstrip("\n"))
            if line.strip() == "OPEN":
                opened.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert opened.wait(180), f"the transaction was never opened: {producer.stderr.read()}"
        before = parse_fates("\n".join(lines))
        # Written after the open transaction's records: beyond the last stable offset too.
        after_open = [f"{run}-after-open-{i}" for i in range(3 * PARTITIONS)]
        cluster.produce(topic, after_open)
        start_connector(worker, run, cfg, tasks=TASKS)
        settled = set(before["C"]) | set(before["P"])
        wait_for("every record below the last stable offset in the file",
                 lambda: settled <= set(file_lines(out)), timeout=180,
                 on_timeout=lambda: connector_trace(worker, run))
        held_back = set(file_lines(out)) & (set(before["O"]) | set(after_open))
        assert not held_back, f"records at or past the open transaction delivered: {held_back}"

        producer.stdin.write("commit\n")
        producer.stdin.flush()
        assert producer.wait(120) == 0, producer.stderr.read()[-3000:]
        reader.join(30)
        assert "COMMITTED" in lines, lines[-5:]
        want = settled | set(before["O"]) | set(after_open)
        wait_for("the committed transaction and what followed it in the file",
                 lambda: want <= set(file_lines(out)), timeout=180,
                 on_timeout=lambda: connector_trace(worker, run))
        stop_and_settle(cluster, worker, run, TASKS)
        written = set(file_lines(out))
        assert not written & set(before["A"]), "aborted records written"
        assert written == want, sorted(written ^ want)[:10]
    finally:
        if producer.poll() is None:
            producer.kill()
        delete_connector(worker, run)
