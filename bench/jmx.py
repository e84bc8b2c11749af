"""JMX reads of the bench's JVMs (the worker's sharesink metrics, each broker's request counts)
through bench/peers/jmx-read (the attach API: no JMX port needed), one attach per read of any
number of attributes. Every read runs outside a timed window: an attach costs the target JVM a
little CPU."""

from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional

JMX_READ = Path(__file__).resolve().parent / "peers" / "jmx-read" / "JmxRead.java"

# The requests counted on each broker over a run: a classic consumer's fetches (FetchConsumer;
# Fetch counts the followers' replication fetches too, FetchFollower those alone), a share
# member's fetches and acknowledgements, the share-state reads and writes (from the brokers'
# persisters to the share coordinator), heartbeats and offset commits.
BROKER_REQUESTS = ("Fetch", "FetchConsumer", "FetchFollower", "ShareFetch", "ShareAcknowledge",
                   "ReadShareGroupState", "WriteShareGroupState", "ShareGroupHeartbeat",
                   "OffsetCommit")


REQUESTS_PATTERN = "kafka.network:type=RequestMetrics,name=RequestsPerSec,*"
# what the share coordinators appended to their state topic (records and bytes, leaders only)
STATE_TOPIC_PATTERN = "kafka.server:type=BrokerTopicMetrics,topic=__share_group_state,*"
STATE_TOPIC_METRICS = {"MessagesInPerSec": "StateTopicRecordsIn", "BytesInPerSec": "StateTopicBytesIn"}


def state_topic_counts(counts: Dict[str, float]) -> Dict[str, int]:
    """{"StateTopicRecordsIn": n, "StateTopicBytesIn": n} from the state topic's
    BrokerTopicMetrics counts (what a broker leading state partitions appended to them)."""
    out: Dict[str, int] = {}
    for mbean, v in counts.items():
        if "topic=__share_group_state" not in mbean:
            continue
        name = re.search(r"name=([A-Za-z]+)", mbean)
        if name and name.group(1) in STATE_TOPIC_METRICS:
            out[STATE_TOPIC_METRICS[name.group(1)]] = int(v)
    return out


def parse(text: str) -> Dict[str, Dict[str, float]]:
    """JmxRead's output ("name TAB attribute TAB value" lines) as {attribute: {name: value}};
    values that are not numbers are left out."""
    out: Dict[str, Dict[str, float]] = collections.defaultdict(dict)
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        name, attribute, value = parts
        try:
            out[attribute][name] = float(value)
        except ValueError:
            continue
    return dict(out)


def request_counts(counts: Dict[str, float]) -> Dict[str, int]:
    """{request name: count} from {RequestsPerSec MBean name: Count}, for BROKER_REQUESTS (an
    MBean per request and version: summed)."""
    out: Dict[str, int] = collections.Counter()
    for mbean, v in counts.items():
        request = re.search(r"request=([A-Za-z]+)", mbean)
        if request and request.group(1) in BROKER_REQUESTS:
            out[request.group(1)] += int(v)
    return dict(out)


def requests_between(before: Dict[str, Dict[str, int]],
                     after: Dict[str, Dict[str, int]]) -> Dict[str, Dict[str, int]]:
    """Each broker's requests over a run: the counts after less the counts before."""
    return {b: {k: v - before.get(b, {}).get(k, 0) for k, v in counts.items()}
            for b, counts in after.items()}


class Jmx:
    """Reads through JmxRead, compiled once per bench output dir (again when its source is newer)."""

    def __init__(self, cluster, out_dir: Path, say: Callable[[str], None]):
        self.c = cluster
        self.out = out_dir / "jmx-read"
        self.say = say

    def read(self, pid: int, pattern: str,
             attributes: Iterable[str]) -> Dict[str, Dict[str, float]]:
        """{attribute: {MBean name: value}} for the MBeans matching `pattern` in JVM `pid`; {}
        when unavailable."""
        attributes = list(attributes)
        java = self.c.java_cmd("x")[0]
        cls = self.out / "JmxRead.class"
        try:
            if not cls.exists() or cls.stat().st_mtime < JMX_READ.stat().st_mtime:
                self.out.mkdir(parents=True, exist_ok=True)
                subprocess.run([str(Path(java).with_name("javac")), "-nowarn", "-d", str(self.out),
                                str(JMX_READ)], check=True, capture_output=True, text=True)
            p = subprocess.run([java, "-cp", str(self.out), "JmxRead", str(pid), pattern,
                                *attributes], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            self.say(f"      (JMX {pattern} {attributes} unavailable: {e})")
            return {}
        return parse(p.stdout)

    def broker_requests(self) -> Dict[str, Dict[str, int]]:
        """{broker: {request: count since its start}} for BROKER_REQUESTS; read before and after
        a run, the difference is the run's (`requests_between`)."""
        out: Dict[str, Dict[str, int]] = {}
        for i in range(self.c.brokers):
            pid = self.broker_pid(i)
            if pid is None:
                continue
            values = self.read(pid, f"{REQUESTS_PATTERN};{STATE_TOPIC_PATTERN}", ["Count"])
            counts = values.get("Count", {})
            out[self.c.broker_name(i)] = {**request_counts(counts), **state_topic_counts(counts)}
        return out

    def broker_pid(self, i: int) -> Optional[int]:
        rec = self.c.procs.recorded(self.c.broker_name(i))
        return int(rec["pid"]) if rec else None
