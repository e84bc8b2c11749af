"""The (d) findings on what sharesink's engine asked of the brokers and what each broker handled
(bench/report.py and bench/connect.py's counting; no broker needed)."""

from __future__ import annotations

import connect
import report


def test_a_runs_requests_are_the_counts_after_less_the_counts_before():
    before = {"broker-0": {"ShareFetch": 100, "Fetch": 7}, "broker-1": {"ShareFetch": 5}}
    after = {"broker-0": {"ShareFetch": 160, "Fetch": 9, "ShareAcknowledge": 4},
             "broker-1": {"ShareFetch": 5}}
    assert connect.Connect.requests_between(before, after) == {
        "broker-0": {"ShareFetch": 60, "Fetch": 2, "ShareAcknowledge": 4},
        "broker-1": {"ShareFetch": 0}}


def test_engine_finding_derives_rates_and_records_per_non_empty_fetch():
    run = {"tasks": 3, "seconds": 4.0, "engine": {
        "fetch_requests": 1000, "fetch_requests_empty": 200, "records_fetched": 2_000_000,
        "ack_requests": 30, "ack_errors": 0, "fetch_latency_avg_ms": 3.5,
        "fetch_latency_avg_ms_per_task": [3.1, 3.5, 3.9], "ack_latency_avg_ms": 2.0,
        "session_resets": 0, "rejoins": 0}}
    text = report._engine_round_trips(run)
    assert "1,000 ShareFetches (250 a second" in text
    assert "200 of them empty (20%)" in text
    assert "2,500 records in each that brought any" in text
    assert "3.1, 3.5, 3.9" in text


def test_engine_finding_is_left_out_when_the_counters_were_not_read():
    assert report._engine_round_trips({"tasks": 3, "seconds": 4.0}) == ""
    assert report._broker_requests({"broker_requests": {}}, {"broker_requests": {"b": {}}}) == ""


def test_broker_requests_name_each_broker_sharesink_then_classic():
    sh = {"broker_requests": {"broker-0": {"ShareFetch": 1200, "Fetch": 0},
                              "broker-1": {"ShareFetch": 900}}}
    cl = {"broker_requests": {"broker-0": {"Fetch": 300}, "broker-1": {"Fetch": 250}}}
    text = report._broker_requests(sh, cl)
    assert "broker-0: ShareFetch 1,200 | Fetch 300" in text
    assert "broker-1: ShareFetch 900 | Fetch 250" in text


def test_slow_sink_requests_are_per_row_written_when_read():
    sh = {"rows_when_requests_read": 1000, "machine_busy": 0.84, "broker_cpu_s": 20.0,
          "worker_cpu_s": 9.0,
          "broker_requests": {"broker-0": {"ShareFetch": 1500, "WriteShareGroupState": 250}},
          "engine": {"fetch_requests": 1200, "fetch_requests_empty": 300, "ack_requests": 100,
                     "fetch_latency_avg_ms": 12.0, "ack_latency_avg_ms": 3.0,
                     "session_resets": 0}}
    cl = {"rows_when_requests_read": 500, "broker_requests": {"broker-0": {"Fetch": 100}}}
    text = report._slow_requests(sh, cl)
    assert "sharesink broker-0 ShareFetch 1.50 WriteShareGroupState 0.25" in text
    assert "classic broker-0 Fetch 0.20" in text
    assert "1.20 ShareFetches (25% of them empty) and 0.10" in text
    assert report._slow_requests({}, {}) == ""


def test_own_cores_finding_pairs_each_classic_run_with_its_sharesink_run():
    cl = {"records_per_s": 540_000, "records": 2_000_000, "worker_cpu_s": 3.6,
          "broker_cpu_s": 0.6, "machine_busy": 0.8,
          "runs": [{"records_per_s": 574_000}, {"records_per_s": 490_000},
                   {"records_per_s": 540_000}]}
    sh = {"records_per_s": 549_000, "records": 2_000_000, "worker_cpu_s": 2.9,
          "broker_cpu_s": 2.5, "machine_busy": 0.76,
          "runs": [{"records_per_s": 549_000}, {"records_per_s": 562_000},
                   {"records_per_s": 476_000}]}
    text = report._fast_on_own_cores({"dpin_share": sh, "dpin_classic": cl})
    assert "sharesink 549,000 records/s" in text and "(1.02)" in text
    assert "574,000 / 549,000; 490,000 / 562,000; 540,000 / 476,000" in text
    assert "worker 1.45 vs 1.8 s, brokers 1.25 vs 0.3 s" in text
    assert report._fast_on_own_cores({"dpin_share": {"error": "x"}}) == ""
