"""What the runs cost the brokers per million records (bench/cost.py), and the readings it is
made of: JmxRead's output (bench/jmx.py), the engine's counters (bench/connect.py), the share
consumer benches' progress (bench/consumers.py). No broker needed."""

from __future__ import annotations

import connect
import consumers
import cost
import jmx
import report


def _d_run(records, broker_cpu, jit, fetches, empty, writes, acks=0):
    return {"records": records, "broker_cpu_s": broker_cpu,
            "broker_cpu_s_by_thread": {"jit": jit, "requests": broker_cpu - jit},
            "broker_requests": {"broker-0": {"ShareFetch": fetches // 2,
                                             "WriteShareGroupState": writes},
                                "broker-1": {"ShareFetch": fetches - fetches // 2,
                                             "ShareAcknowledge": acks}},
            "engine": {"fetch_requests": fetches, "fetch_requests_empty": empty,
                       "fetch_latency_avg_ms": 9.0}}


def test_runs_add_up_before_dividing_per_million_records():
    p = cost.pool([_d_run(2_000_000, 2.0, 0.5, 800, 400, 360),
                   _d_run(2_000_000, 1.0, 0.1, 600, 100, 340),
                   {"error": "failed"}])
    f = cost.figures(p)
    assert (f["records"], f["runs"]) == (4_000_000, 2)
    assert f["broker_cpu_s_per_m"] == 0.75
    assert f["broker_cpu_s_per_m_by_thread"] == {"jit": 0.15, "requests": 0.6}
    assert f["broker_jit_share"] == 0.2
    assert f["broker_cpu_s_per_m_without_jit"] == 0.6
    assert f["share_fetches_per_m"] == 350.0
    assert f["state_writes_per_m"] == 175.0
    assert f["engine_empty_share_fetches_per_m"] == 125.0
    assert f["empty_share_fetch_share"] == round(500 / 1400, 3)
    # an average is no count: not added up
    assert "fetch_latency_avg_ms" not in p["engine"]


def test_slow_sink_cpu_is_per_row_of_the_window_and_requests_per_row_when_read():
    a = {"rows_in_window": 10_000, "rows_when_requests_read": 20_000, "broker_cpu_s": 12.0,
         "broker_cpu_s_by_thread": {"jit": 0.6},
         "broker_requests": {"broker": {"ShareFetch": 19_000}}}
    f = cost.figures(cost.pool([a], "rows_in_window", "rows_when_requests_read"))
    assert f["broker_cpu_s_per_m"] == 1200.0
    assert f["share_fetches_per_m"] == 950_000.0
    assert f["broker_jit_share"] == 0.05


def test_derive_sets_the_goal_keys_from_every_run_of_a_runtime():
    runs = [_d_run(2_000_000, 2.0, 0.1, 800, 40, 360), _d_run(2_000_000, 2.0, 0.1, 800, 40, 360)]
    java = [_d_run(2_000_000, 4.0, 0.2, 900, 0, 500)]
    res = {"connect": {"results": {
        "d_share": runs[0], "d_share_all": runs,
        "d_java_share": java[0], "d_java_share_all": java,
        "d_classic": {"records": 2_000_000, "broker_cpu_s": 0.2,
                      "broker_cpu_s_by_thread": {"jit": 0.05},
                      "broker_requests": {"broker": {"FetchConsumer": 300, "Fetch": 300}}},
        "a_share": {"rows_in_window": 8000, "rows_when_requests_read": 16_000,
                    "broker_cpu_s": 9.0, "broker_requests": {"broker": {"ShareFetch": 8_000}}},
        "a_classic": {"error": "not run (--scenarios)"}}}}
    cost.derive(res)
    assert res["cost_d_share_broker_cpu_s_per_m"] == 1.0
    assert res["cost_d_java_share_broker_cpu_s_per_m"] == 2.0
    assert res["cost_d_broker_cpu_share_vs_java_share"] == 0.5
    assert res["cost_d_broker_cpu_share_vs_classic"] == 10.0
    assert res["cost_d_empty_share_fetch_share"] == 0.05
    assert res["cost_d_classic_consumer_fetches_per_m"] == 150.0
    assert res["cost_a_share_fetches_per_row"] == 0.5
    assert res["cost_broker_jit_share_max"] == 0.25
    assert "a" in res["cost"] and "classic" not in res["cost"]["a"]
    rows = cost.table_rows(res)
    share = next(r for r in rows if r[0].startswith("(d) sharesink"))
    assert share[1] == "4,000,000 (2 runs)"
    assert share[2] == "**1** (5% JIT)"
    assert share[5] == "400 (20 empty)"


def test_acknowledgements_on_the_fetch_are_costed_against_the_default_and_java():
    default = [_d_run(2_000_000, 2.0, 0.0, 800, 40, 360, acks=600)]
    on_fetch = [_d_run(2_000_000, 1.5, 0.0, 900, 200, 360, acks=0),
                _d_run(2_000_000, 1.5, 0.0, 900, 200, 360, acks=0)]
    java = [_d_run(2_000_000, 3.0, 0.0, 900, 0, 500)]
    res = {"connect": {"results": {
        "d_share": default[0], "d_share_all": default,
        "d_share_ack_on_fetch": on_fetch[0], "d_share_ack_on_fetch_all": on_fetch,
        "d_java_share": java[0], "d_java_share_all": java}}}
    cost.derive(res)
    assert res["cost_d_share_ack_on_fetch_broker_cpu_s_per_m"] == 0.75
    assert res["cost_d_share_ack_on_fetch_share_acknowledges_per_m"] == 0.0
    assert res["cost_d_share_share_acknowledges_per_m"] == 300.0
    assert res["cost_d_broker_cpu_ack_on_fetch_vs_ack_first"] == 0.75
    assert res["cost_d_broker_cpu_ack_on_fetch_vs_java_share"] == 0.5
    labels = [r[0] for r in cost.table_rows(res)]
    assert "(d'') sharesink, acknowledgements on the fetch" in labels


def test_the_report_names_a_cost_goal_it_could_not_measure():
    res = {"parts": ["connect"], "connect": {"results": {}}}
    report.derive(res)
    assert res["cost_d_broker_cpu_share_vs_java_share"] is None
    assert "not measured" in res["cost_d_broker_cpu_share_vs_java_share_reason"]
    assert report._verdict("cost_d_empty_share_fetch_share", 0.08, res) == "met"
    assert report._verdict("cost_a_share_fetches_per_row", 0.95, res) == "**missed**"


def test_consumer_runs_are_pooled_per_client_and_members():
    runs = [{"client": "engine", "members": 1, "record_size": 100, "records": 5_000_000,
             "broker_cpu_s": 1.0, "broker_requests": {"broker": {"ShareFetch": 2500}}},
            {"client": "engine", "members": 1, "record_size": 100, "records": 5_000_000,
             "broker_cpu_s": 2.0, "broker_requests": {"broker": {"ShareFetch": 2500}}},
            {"client": "java", "members": 1, "record_size": 100, "records": 5_000_000,
             "broker_cpu_s": 6.0},
            {"client": "engine", "members": 1, "record_size": 1024, "records": 1_000_000,
             "broker_cpu_s": 9.0}]
    res = {"consumer_runs": runs}
    cost.derive(res)
    assert res["cost"]["consumers"]["engine_1m"]["broker_cpu_s_per_m"] == 0.3
    assert res["cost"]["consumers"]["engine_1m"]["share_fetches_per_m"] == 500.0
    assert res["cost_consumers_1m_broker_cpu_engine_vs_java"] == 0.25


def test_jmx_read_output_and_request_counts():
    text = ("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=ShareFetch,version=1"
            "\tCount\t120\n"
            "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=ShareFetch,version=2"
            "\tCount\t5\n"
            "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchConsumer,version=17"
            "\tCount\t7\n"
            "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Metadata,version=12"
            "\tCount\t9\n"
            "a name\tOneMinuteRate\tnot a number\n"
            "garbage line\n")
    read = jmx.parse(text)
    assert list(read) == ["Count"]
    assert jmx.request_counts(read["Count"]) == {"ShareFetch": 125, "FetchConsumer": 7}
    state = {"kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,"
             "topic=__share_group_state": 370.0,
             "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,"
             "topic=__share_group_state": 41_000.0,
             "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,"
             "topic=__share_group_state": 9.0,
             "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=bench_fast": 5.0}
    assert jmx.state_topic_counts(state) == {"StateTopicRecordsIn": 370,
                                             "StateTopicBytesIn": 41_000}


def test_engine_counters_sum_the_tasks_and_average_the_round_trips():
    read = {"share-engine-fetch-requests-total": {"t0": 10.0, "t1": 30.0},
            "share-engine-fetch-latency-avg-ms": {"t0": 2.0, "t1": 4.0},
            "share-engine-rejoins-total": {}}
    out = connect.engine_counters(read, connect.Connect.ENGINE_COUNTERS)
    assert out == {"fetch_requests": 40, "fetch_latency_avg_ms": 3.0,
                   "fetch_latency_avg_ms_per_task": [2.0, 4.0]}


def test_share_consumer_benches_say_when_records_arrive_and_end():
    assert consumers.progress_event("engine", "first record") == "first"
    assert consumers.progress_event("engine", "last record\n") == "last"
    assert consumers.progress_event("engine", "... 500000 records") is None
    detail = ("2026-12-05 10:00:01:100, 2026-12-05 10:00:01:200, 1.1, 11.0, {n}, 10000.0, "
              "0, 100, 1.1, 10000.0 for share consumer 1")
    assert consumers.progress_event("java", detail.format(n=0).replace(", 10000.0,", ", 0,", 1)) \
        is None
    # ShareConsumerPerformance's per-consumer report: time, time, MB, MB/s, records, ...
    cols = detail.split(", ")
    cols[5] = "1200"
    assert consumers.progress_event("java", ", ".join(cols)) == "first"
    cols[5] = "0"
    assert consumers.progress_event("java", ", ".join(cols)) is None
    summary = "2026-12-05 10:00:00:000, 2026-12-05 10:00:05:000, 22.0, 4.4, 2000000, 400000.0, 0"
    assert consumers.progress_event("java", summary) == "last"
    assert consumers.progress_event("java", "start.time, end.time, data.consumed.in.MB") is None


def test_fast_sink_cpu_comes_from_the_later_window_and_requests_from_the_whole_run():
    run = _d_run(2_000_000, 2.0, 0.8, 800, 400, 360)
    run["steady"] = {"records": 1_000_000, "broker_cpu_s": 0.5,
                     "broker_cpu_s_by_thread": {"jit": 0.05, "requests": 0.45}}
    f = cost.figures(cost.pool([run]))
    assert f["records"] == 1_000_000
    assert f["broker_cpu_s_per_m"] == 0.5
    assert f["broker_jit_share"] == 0.1
    assert f["share_fetches_per_m"] == 400.0, "requests over the run's 2 M records"
    assert f["engine_empty_share_fetches_per_m"] == 200.0


def test_slow_sink_engine_counters_are_per_row_written_when_read():
    a = {"rows_in_window": 10_000, "rows_when_requests_read": 20_000, "broker_cpu_s": 1.0,
         "engine": {"fetch_requests": 19_000, "fetch_requests_empty": 190}}
    f = cost.figures(cost.pool([a], "rows_in_window", "rows_when_requests_read"))
    assert f["engine_share_fetches_per_m"] == 950_000.0
    assert f["empty_share_fetch_share"] == 0.01


def _t_run(records, broker_cpu, jit, state_records):
    return {"records": records, "broker_cpu_s": broker_cpu,
            "broker_cpu_s_by_thread": {"jit": jit, "requests": broker_cpu - jit},
            "broker_requests": {"broker": {"ShareFetch": 100,
                                           "StateTopicRecordsIn": state_records}}}


def test_the_transactional_topic_is_costed_per_committed_record_against_the_plain_one():
    plain = [_t_run(2_000_000, 2.2, 0.2, 400)]
    txn = [_t_run(900_000, 1.0, 0.1, 360), _t_run(900_000, 1.0, 0.1, 360)]
    fixed_fetch = [_t_run(900_000, 1.9, 0.1, 1_800)]
    java = [_t_run(900_000, 1.35, 0.0, 450)]
    res = {"connect": {"results": {
        "d_share": plain[0], "d_share_all": plain,
        "t_share": txn[0], "t_share_all": txn,
        "t_share_fixed_fetch": fixed_fetch[0], "t_share_fixed_fetch_all": fixed_fetch,
        "t_java_share": java[0], "t_java_share_all": java,
        "t_classic": _t_run(900_000, 0.45, 0.3, 0)}}}
    cost.derive(res)
    # per committed record: (d) 1.0 s/M without JIT, (dt) 1.0, with fixed-size fetches 2.0, Java 1.5
    assert res["cost_t_share_broker_cpu_s_per_m_without_jit"] == 1.0
    assert res["cost_t_broker_cpu_share_vs_plain_without_jit"] == 1.0
    assert res["cost_t_broker_cpu_share_vs_plain"] == round((2.0 / 1.8) / 1.1, 3)
    assert res["cost_t_broker_cpu_share_vs_java_share_without_jit"] == round(1.0 / 1.5, 3)
    assert res["cost_t_broker_cpu_adaptive_vs_fixed_fetch_without_jit"] == 0.5
    assert res["cost_t_state_topic_records_share_vs_plain"] == 2.0
    # (dt)'s JIT has its own maximum (classic's window: 2/3); issue 43's is (a), (d), consumers
    assert res["cost_t_broker_jit_share_max"] == round(0.3 / 0.45, 3)
    assert res["cost_broker_jit_share_max"] == round(0.2 / 2.2, 3)
    rows = cost.table_rows(res)
    assert all(len(r) == len(cost.TABLE_HEADER) for r in rows)
    labels = [r[0] for r in rows]
    assert "(dt) sharesink, 3 tasks, transactional topic, read_committed" in labels
    txn_row = rows[labels.index("(dt) sharesink, 3 tasks, transactional topic, read_committed")]
    assert txn_row[cost.TABLE_HEADER.index("`__share_group_state` records/M")] == "400"
    assert any(label.startswith("(dt') sharesink") for label in labels)
    assert "(dt) classic, 3 tasks, transactional topic, read_committed" in labels
    assert labels.index("(d) sharesink, 3 tasks") < labels.index(
        "(dt) sharesink, 3 tasks, transactional topic, read_committed")


def test_without_a_transactional_run_its_ratios_are_none_and_say_why():
    res = {"parts": ["connect"], "connect": {"results": {
        "d_share": _t_run(2_000_000, 2.0, 0.0, 400)}}}
    report.derive(res)
    assert "t" not in res["cost"]
    assert res["cost_t_broker_cpu_share_vs_plain_without_jit"] is None
    assert "not measured" in res["cost_t_broker_cpu_share_vs_plain_without_jit_reason"]
    assert res["cost_t_broker_jit_share_max"] is None


def test_issue_54_goals_have_verdicts():
    res = {}
    assert report._verdict("cost_t_broker_cpu_share_vs_plain_without_jit", 1.15, res) == "met"
    assert report._verdict("cost_t_broker_cpu_share_vs_plain_without_jit", 1.3, res) == \
        "**missed**"
    assert report._verdict("t_aborted_written", 0, res) == "met"
    assert report._verdict("t_aborted_written", 12, res) == "**missed**"
    assert report._verdict("cost_t_broker_jit_share_max", 0.12, res) == "**missed**"
    for k in report.KEYS:
        assert k in report.TARGETS, k
