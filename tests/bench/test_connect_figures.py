"""bench/connect_figures.py: from the scenarios' runs to the result keys and the report's rows,
fed runs as bench/connect.py records them (no broker, no worker)."""

from __future__ import annotations

from types import SimpleNamespace

import connect_figures

NOT_RUN = {"error": "not run (--scenarios)"}


def _cx(brokers: int = 1) -> SimpleNamespace:
    return SimpleNamespace(
        share_tasks=12, scale_tasks=(6, 24), c=SimpleNamespace(brokers=brokers, replication=3),
        pg_version="15", run_a=60, stall=20, n_fast=2_000_000, fast_pairs=3, warm_share=2,
        g_burst=20_000, g_quiet=30, g_after=60, g_min_cap=600,
        txn_produced={"committed": 900_000, "aborted": 100_000, "transactions": 10_000})


def _results(**measured) -> dict:
    results = {k: dict(NOT_RUN) for k in (
        "a_classic", "a_share", "b_classic", "b_share", "b_share_window", "c_classic",
        "c_share", "d_classic", "d_share", "d_share_window_2000")}
    results["dpin_classic"] = results["dpin_share"] = {"error": "not run (one broker)"}
    results.update(measured)
    return results


def test_the_headline_ratios_come_from_the_runs_of_both_runtimes():
    results = _results(
        a_classic={"rows_per_s": 100.0}, a_share={"rows_per_s": 380.0},
        d_classic={"records_per_s": 100_000}, d_share={"records_per_s": 80_000},
        d_share_window_2000={"records_per_s": 70_000})
    res, out = {}, {}
    connect_figures.derive("ad", _cx(), results, res, out)
    assert res["connect_beyond_partitions"] == 3.8
    assert res["connect_overhead"] == 0.8
    assert res["connect_overhead_window_2000"] == 0.7
    assert res["connect_overhead_worker_own_core"] is None
    # what did not run says why, never a number
    assert res["connect_stalled_task_loss"] is None
    assert res["connect_stalled_task_loss_reason"] == "not run (--scenarios)"
    assert res["latency_p99_share_vs_classic_worst_reason"] == "not run (--scenarios)"
    assert res["autoscale_drain_vs_fixed_max_reason"] == "not run (--scenarios)"
    labels = [row[0] for row in out["rows"]]
    assert not any(label.startswith("(d*)") for label in labels), "one broker: no (d*) row"
    assert "**3.8×**" in out["rows"][0][3]
    assert out["bars"][2] == ["(d) fast sink /100", 1000.0, 800.0]
    # (d'') was not in these results (an older bench): no row, no ratio
    assert res["connect_d_ack_on_fetch_vs_ack_first"] is None
    assert not any(label.startswith("(d'')") for label in labels)


def test_acknowledgements_on_the_fetch_are_compared_with_classic_and_with_d():
    results = _results(
        d_classic={"records_per_s": 100_000}, d_share={"records_per_s": 80_000},
        d_share_ack_on_fetch={"records_per_s": 60_000})
    res, out = {}, {}
    connect_figures.derive("d", _cx(), results, res, out)
    assert res["connect_overhead_ack_on_fetch"] == 0.6
    assert res["connect_d_ack_on_fetch_vs_ack_first"] == 0.75
    row = next(r for r in out["rows"] if r[0].startswith("(d'')"))
    assert "share.fetch.acknowledge.first=false" in row[0]
    assert row[2] == "60,000" and row[3] == "0.6 (0.75 of (d))"


def test_three_brokers_report_the_pinned_pair_and_a_failed_run_by_its_error():
    results = _results(
        a_classic={"rows_per_s": 100.0}, a_share={"error": "TimeoutError: no rows"},
        d_classic={"records_per_s": 100_000}, d_share={"records_per_s": 90_000},
        dpin_classic={"records_per_s": 100_000}, dpin_share={"records_per_s": 95_000})
    res, out = {}, {}
    connect_figures.derive("ad", _cx(brokers=3), results, res, out)
    assert res["connect_overhead_worker_own_core"] == 0.95
    assert res["connect_beyond_partitions"] is None
    assert res["connect_beyond_partitions_reason"] == "TimeoutError: no rows"
    assert any(row[0].startswith("(d*)") for row in out["rows"])
    assert out["rows"][0][2].startswith("failed: TimeoutError")


def test_latency_rows_compare_p99_where_both_runtimes_kept_up():
    def lat(p99, kept_up=True):
        return {"p50_ms": 5.0, "p99_ms": p99, "p999_ms": p99 + 1, "max_ms": p99 + 2,
                "kept_up": kept_up, "achieved_rate": 1000.0}
    measured = {}
    for sink, fracs in (("fast", (25, 50, 75)), ("slow", (50, 150))):
        for pct in fracs:
            measured[f"e_{sink}_{pct}_classic"] = lat(10.0)
            measured[f"e_{sink}_{pct}_share"] = lat(12.0 if pct != 150 else 99.0,
                                                    kept_up=pct != 150)
    res = {"latency_basis": {"fast_records_per_s": 100_000, "slow_rows_per_s": 130}}
    out = {}
    connect_figures.derive("e", _cx(), _results(**measured), res, out)
    assert res["latency_fast_25_p99_share_vs_classic"] == 1.2
    assert res["latency_slow_150_share_kept_up"] is False
    # the slow 150% row fell behind in share mode: it does not count toward the worst ratio
    assert res["latency_p99_share_vs_classic_worst"] == 1.2
    assert len(out["latency_rows"]) == 5


def _txn_results(**measured) -> dict:
    share = [{"records_per_s": 60_000, "aborted_written": 0},
             {"records_per_s": 64_000, "aborted_written": 0}]
    fixed_fetch = [{"records_per_s": 40_000, "aborted_written": 0}]
    txn = dict(t_classic={"records_per_s": 75_000}, t_share=share[1], t_share_all=share,
               t_share_fixed_fetch=fixed_fetch[0], t_share_fixed_fetch_all=fixed_fetch,
               t_java_share={"records_per_s": 50_000})
    return _results(d_classic={"records_per_s": 100_000}, d_share={"records_per_s": 80_000},
                    **{**txn, **measured})


def test_the_transactional_topic_is_compared_with_classic_the_plain_topic_and_fixed_fetches():
    res, out = {}, {}
    connect_figures.derive("dt", _cx(), _txn_results(), res, out)
    assert res["connect_txn_overhead"] == round(64_000 / 75_000, 3)
    assert res["connect_txn_vs_plain"] == 0.8
    assert res["connect_txn_overhead_fixed_fetch"] == round(40_000 / 75_000, 3)
    assert res["connect_txn_adaptive_vs_fixed_fetch"] == 1.6
    assert res["t_aborted_written"] == 0
    row = next(r for r in out["rows"] if r[0].startswith("(dt) "))
    assert row[0] == ("(dt) fast sink on a transactional topic (100 records per transaction, "
                      "10% aborted; read_committed), committed records/s")
    assert row[1:3] == ["75,000", "64,000"]
    assert "(0.8 of (d) sharesink)" in row[3] and "aborted records written: 0" in row[3]
    fixed_fetch = next(r for r in out["rows"] if r[0].startswith("(dt')"))
    assert "share.consumer.share.fetch.bytes.adaptive=false" in fixed_fetch[0] and fixed_fetch[2] == "40,000"
    assert "900,000 records committed, 100,000 aborted" in out["setup"]


def test_aborted_lines_are_added_up_over_every_sharesink_run():
    share = [{"records_per_s": 60_000, "aborted_written": 3},
             {"records_per_s": 64_000, "aborted_written": 0},
             {"error": "only 10 of 900000 lines", "aborted_written": 10}]
    res, out = {}, {}
    connect_figures.derive("t", _cx(), _txn_results(t_share_all=share), res, out)
    assert res["t_aborted_written"] == 13


def test_results_without_the_transactional_topic_have_no_row_and_say_why():
    # an older bench: no t_* results at all
    res, out = {}, {}
    connect_figures.derive("d", _cx(), _results(d_classic={"records_per_s": 100_000},
                                                d_share={"records_per_s": 80_000}), res, out)
    assert res["connect_txn_overhead"] is None
    assert res["connect_txn_overhead_reason"] == "not run (an older bench)"
    assert res["t_aborted_written"] is None
    assert not any(r[0].startswith(("(dt)", "(dt')")) for r in out["rows"])
    assert "bench_txn" not in out["setup"]
    # this bench, t left out of --scenarios
    not_run = {k: dict(NOT_RUN) for k in ("t_classic", "t_share", "t_share_fixed_fetch",
                                          "t_java_share")}
    res, out = {}, {}
    connect_figures.derive("d", _cx(), _results(**not_run), res, out)
    assert res["connect_txn_vs_plain_reason"] == "not run (--scenarios)"
    assert not any(r[0].startswith(("(dt)", "(dt')")) for r in out["rows"])


def test_a_failed_transactional_run_keeps_its_row_with_the_error():
    res, out = {}, {}
    connect_figures.derive("dt", _cx(), _txn_results(
        t_share={"error": "RuntimeError: bench_txn not produced"}, t_share_all=None), res, out)
    assert res["connect_txn_overhead"] is None
    assert res["connect_txn_overhead_reason"] == "RuntimeError: bench_txn not produced"
    row = next(r for r in out["rows"] if r[0].startswith("(dt) "))
    assert row[2] == "failed: RuntimeError: bench_txn not produced"
