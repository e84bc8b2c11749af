"""(dt), the fast sink on a topic written in transactions (bench/connect.py): what TxnProducer
prints, the aborted records' lines in a sink's file, and the order the runs go in. No broker, no
worker: the runs are stand-ins that say what they were asked."""

from __future__ import annotations

from types import SimpleNamespace

import connect


def test_the_producer_summary_is_its_last_line():
    out = "some log line\ncommitted 900000 aborted 100000 transactions 10000\n"
    assert connect.txn_summary(out) == {"committed": 900_000, "aborted": 100_000,
                                        "transactions": 10_000}
    assert connect.txn_summary("committed 9 aborted 1\n") == {}
    assert connect.txn_summary(None) == {}


def test_aborted_records_are_the_lines_starting_with_a(tmp_path):
    path = tmp_path / "sink.out"
    path.write_bytes(b"c000000000\nc000000001\na000000100\nc000000002\na000000101\n")
    assert connect.aborted_lines(path) == 2
    assert connect.aborted_lines(tmp_path / "never-written.out") == 0


class _Cx:
    """A Connect whose (dt) runs return what they were asked."""

    def __init__(self, fast_pairs):
        self.fast_pairs, self.warm_share, self.warm_share_max = fast_pairs, 2, 4
        self.warmed = []

    def fast_on_txn(self, runtime, extra):
        return {"runtime": runtime, "settings": extra, "records_per_s": 1000,
                "aborted_written": 0}

    def share_consumer_on_txn(self, client):
        return {"client": client, "records_per_s": 500}

    def warm_fast(self, run):
        self.warmed = [run("classic"), run("share")]
        return self.warmed


def _run_txn(scenarios, fast_pairs=2):
    ctx = SimpleNamespace(scenarios=set(scenarios), say=lambda msg: None)
    cx, order, results = _Cx(fast_pairs), [], {}

    def attempt(key, fn, *a):
        order.append(key)
        results[key] = fn(*a)
        return results[key]
    connect.run_txn(ctx, cx, attempt, results)
    return cx, order, results


def test_each_round_runs_classic_sharesink_and_fixed_fetches_then_the_share_consumer():
    cx, order, results = _run_txn("dt")
    assert order == ["t_classic", "t_share", "t_share_fixed_fetch"] * 2 + ["t_java_share"] * 2
    assert results["t_classic"]["settings"] == {
        "consumer.override.isolation.level": "read_committed"}
    assert results["t_share"]["settings"] == {"share.consumer.isolation.level": "read_committed"}
    assert results["t_share_fixed_fetch"]["settings"] == {
        "share.consumer.isolation.level": "read_committed",
        "share.consumer.share.fetch.bytes.adaptive": "false"}
    assert len(results["t_share_all"]) == 2 and len(results["t_java_share_all"]) == 2
    assert [r["aborted_written"] for r in results["t_share"]["runs"]] == [0, 0]
    assert [r["runtime"] for r in results["t_warmup"]] == ["classic", "share"], \
        "(d) does not warm up the brokers' read_committed acquire"


def test_the_runs_on_the_transactional_topic_warm_the_brokers_up_first():
    cx, _, results = _run_txn("t", fast_pairs=1)
    assert [r["runtime"] for r in results["t_warmup"]] == ["classic", "share"]
    assert cx.warmed[0]["settings"] == {"consumer.override.isolation.level": "read_committed"}
    assert cx.warmed[1]["settings"] == {"share.consumer.isolation.level": "read_committed"}


def test_left_out_of_the_scenarios_every_row_says_so():
    _, order, results = _run_txn("d")
    assert order == []
    assert results["t_share"] == {"error": "not run (--scenarios)"}
    assert "t_share_all" not in results
