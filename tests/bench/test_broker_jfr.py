"""bench/broker_jfr.py and the opt-in broker recordings of bench/proc.py: the attribution from
samples (no JVM), and one real recording of a real JVM through jcmd, read back with jfr."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import broker_jfr
import proc


def test_a_window_label_loses_its_counters_and_keeps_its_settings():
    assert broker_jfr.kind("bd_share_19_11043") == "bd_share"
    assert broker_jfr.kind("bd_share_20_11051 a.b=false steady") == "bd_share a.b=false steady"
    assert broker_jfr.kind("bd_engine_30_11144") == "bd_engine"


def test_threads_are_grouped_as_the_broker_names_them():
    assert broker_jfr.thread_group("data-plane-kafka-request-handler-3") == "handlers"
    assert broker_jfr.thread_group("data-plane-kafka-network-thread-1-ListenerName(PLAIN)-0") \
        == "network"
    assert broker_jfr.thread_group("PersisterStateManager") == "share_state"
    assert broker_jfr.thread_group("share-coordinator-event-processor-0") == "share_state"
    assert broker_jfr.thread_group("C2 CompilerThread0") == "other"


def test_the_request_threads_cpu_is_split_by_the_share_of_samples_holding_a_method():
    handler = "data-plane-kafka-request-handler-0"
    samples = [
        (handler, ["AbstractRecords.lastBatch", "SharePartition.acquire", "KafkaApis.handle"]),
        (handler, ["SharePartition.acquire", "KafkaApis.handle"]),
        (handler, ["KafkaApis.handleShareAcknowledgeRequest", "KafkaApis.handle"]),
        ("data-plane-kafka-network-thread-0", ["Selector.poll"]),
        ("PersisterStateManager", ["SharePartition.acquire"]),   # not a request thread
    ]
    r = broker_jfr.attribute(samples, 2.0, ["SharePartition.acquire",
                                            "KafkaApis.handleShareAcknowledgeRequest",
                                            "Selector.poll", "KafkaApis.handle"])
    assert r["request_samples"] == 4
    assert r["samples"] == {"handlers": 3, "network": 1, "share_state": 1}
    assert r["cpu_s"] == {"SharePartition.acquire": 1.0,
                          "KafkaApis.handleShareAcknowledgeRequest": 0.5,
                          "Selector.poll": 0.5, "KafkaApis.handle": 1.5}


def test_jfr_json_becomes_thread_and_frames():
    doc = {"recording": {"events": [{"values": {
        "sampledThread": {"javaName": "data-plane-kafka-request-handler-1"},
        "stackTrace": {"frames": [
            {"method": {"type": {"name": "org/apache/kafka/common/record/AbstractRecords"},
                        "name": "lastBatch"}},
            {"method": {"type": {"name": "kafka/server/share/SharePartition"},
                        "name": "acquire"}}]}}}]}}
    assert broker_jfr.samples_from_json(doc) == [
        ("data-plane-kafka-request-handler-1",
         ["AbstractRecords.lastBatch", "SharePartition.acquire"])]


BUSY = """
public class Busy {
  public static void main(String[] a) throws Exception {
    var in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
    System.out.println("ready"); System.out.flush();
    in.readLine();
    long x = 0;
    for (long i = 0; i < 3_000_000_000L; i++) { x += i % 7; }
    System.out.println("done " + x); System.out.flush();
    in.readLine();
  }
}
"""


@pytest.mark.skipif(not (shutil.which("java") and shutil.which("jcmd") and shutil.which("jfr")),
                    reason="needs a JDK's java, jcmd and jfr on PATH")
def test_a_cpu_window_records_each_broker_when_asked(tmp_path, monkeypatch):
    src = tmp_path / "Busy.java"
    src.write_text(BUSY)
    jvm = subprocess.Popen(["java", "-XX:+UsePerfData", str(src)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout.readline().strip() == "ready"
        recordings = tmp_path / "jfr"
        recordings.mkdir()
        monkeypatch.setenv("SHARESINK_BENCH_JFR_DIR", str(recordings))
        window = proc.CpuWindow({"broker": jvm.pid, "worker": None}, "bd_share_3_17 k=v")
        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        assert jvm.stdout.readline().startswith("done")
        figures = window.stop()
        index = [json.loads(line) for line in (recordings / "index.jsonl").read_text().splitlines()]
        assert [(w["label"], list(w["files"])) for w in index] == [("bd_share_3_17 k=v", ["broker"])]
        assert index[0]["figures"]["broker_cpu_s"] == figures["broker_cpu_s"] > 0
        samples = broker_jfr.read_samples(recordings / index[0]["files"]["broker"])
        assert any(thread == "main" and "Busy.main" in frames for thread, frames in samples)
    finally:
        jvm.kill()
        jvm.wait()


def test_without_the_setting_a_window_records_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("SHARESINK_BENCH_JFR_DIR", raising=False)
    window = proc.CpuWindow({"broker": 1}, "bd_share_3_17")
    assert window.recordings.dir is None
    window.recordings.stop({})   # no jcmd, no file
