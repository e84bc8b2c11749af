"""Shared helpers for the share-mode end-to-end tests (tests/e2e/test_share_*.py).

Everything here drives real parts: the Connect worker through REST, the broker through Kafka's
own tools (harness), PostgreSQL through psql. Nothing here is a sink.

Measured figures: `record_figures(scenario, ...)` prints them and writes
`build/e2e-figures/<scenario>.json`; `build/e2e-figures/summary.json` collects every scenario
of the run (records produced, delivered, duplicated, lost, plus what else a test measured).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import pytest

from harness import costs
from harness.cluster import CONSOLE_PRODUCER, REPO_ROOT, SHARE_GROUP_COMMAND, Cluster, Rest, RestError
from harness.waits import Budget

SHARE_SINK = "io.sharesink.connect.ShareSinkConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
JDBC_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"

FIGURES_DIR = Path(os.environ.get("SHARESINK_FIGURES_DIR", REPO_ROOT / "build" / "e2e-figures"))


# ----------------------------------------------------------------------------------------------
# small things


def uniq(prefix: str) -> str:
    """A fresh name: `prefix` + 8 hex digits (lower case, no dashes: usable as a SQL table)."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"


@costs.timed_method(costs.POLLS)
def wait_for(what: str, check: Callable[[], Any], timeout: float = 60, interval: float = 0.5,
             on_timeout: Optional[Callable[[], str]] = None) -> Any:
    """Bounded wait until `check()` is truthy; returns its value, fails the test on timeout.
    `timeout` counts machine seconds (harness/waits.py's Budget): it stretches while the machine
    is overloaded, up to a wall-clock cap."""
    budget = Budget(timeout)
    while True:
        result = check()
        if result:
            return result
        if budget.spent():
            extra = ""
            if on_timeout is not None:
                try:
                    extra = "\n" + on_timeout()
                except Exception as e:  # noqa: BLE001 - diagnostics only
                    extra = f"\n(diagnostics failed: {e})"
            pytest.fail(f"{what}: not reached within {budget.describe()}{extra}", pytrace=False)
        time.sleep(interval)


class Progress:
    """Waits for a counter to reach a target, failing only when it stops moving for `stall` s
    (bounded by `timeout` overall); both count machine seconds (harness/waits.py's Budget).
    Records the samples (t, value), t in wall seconds from the start."""

    def __init__(self, what: str, read: Callable[[], int]):
        self.what = what
        self.read = read
        self.samples: List[tuple] = []

    @costs.timed_method(costs.POLLS)
    def wait(self, target: int, stall: float = 120, timeout: float = 900, interval: float = 1.0,
             on_timeout: Optional[Callable[[], str]] = None) -> int:
        budget = Budget(timeout)
        start = time.monotonic()
        last_change = budget.machine_elapsed()
        last = None
        while True:
            v = self.read()
            now = budget.machine_elapsed()
            self.samples.append((round(time.monotonic() - start, 2), v))
            if v != last:
                last, last_change = v, now
            if v >= target:
                return v
            if now - last_change > stall or budget.spent():
                extra = on_timeout() if on_timeout else ""
                pytest.fail(f"{self.what}: {v} of {target} after {budget.describe()} "
                            f"(no progress for {now - last_change:.0f} machine seconds)\n{extra}",
                            pytrace=False)
            time.sleep(interval)


def record_figures(scenario: str, **figures: Any) -> Dict[str, Any]:
    """Print the measured figures of a scenario and store them for the notes."""
    figures = {"scenario": scenario, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               **figures}
    FIGURES_DIR.mkdir(parents=True, exist_ok=True)
    (FIGURES_DIR / f"{scenario}.json").write_text(json.dumps(figures, indent=1, default=str) + "\n")
    summary_path = FIGURES_DIR / "summary.json"
    lock = FIGURES_DIR / ".lock"
    with open(lock, "w") as lf:
        import fcntl
        fcntl.flock(lf, fcntl.LOCK_EX)
        try:
            summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        except ValueError:
            summary = {}
        summary[scenario] = figures
        summary_path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(f"\nFIGURES {scenario}: " + json.dumps(figures, default=str))
    return figures


def count_figures(expected: Iterable[str], delivered: Sequence[str]) -> Dict[str, int]:
    """produced / delivered / distinct / duplicated / lost / unexpected for value lists."""
    exp = set(expected)
    c = Counter(delivered)
    distinct = set(c)
    return {
        "produced": len(exp),
        "delivered": len(delivered),
        "distinct_delivered": len(distinct & exp),
        "duplicated": sum(n - 1 for v, n in c.items() if n > 1),
        "lost": len(exp - distinct),
        "unexpected": len(distinct - exp),
    }


# ----------------------------------------------------------------------------------------------
# worker, connector


def worker_log(cluster: Cluster, index: int = 0) -> str:
    p = cluster.logs_dir / f"worker-{index}.log"
    return p.read_text(errors="replace") if p.exists() else ""


class LogMark:
    """Reads what a worker log gained since the mark was taken."""

    def __init__(self, cluster: Cluster, index: int = 0):
        self.path = cluster.logs_dir / f"worker-{index}.log"
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def text(self) -> str:
        if not self.path.exists():
            return ""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read().decode("utf-8", "replace")

    def lines(self, pattern: str) -> List[str]:
        rx = re.compile(pattern)
        return [l for l in self.text().splitlines() if rx.search(l)]


def share_config(cluster: Cluster, name: str, topics: str, sink_class: str, tasks: int,
                 **extra: Any) -> Dict[str, str]:
    """A ShareSinkConnector config running `sink_class`; `extra` keys with '_' may be given as
    a dict through `extra` too (use cfg.update for dotted keys). No share.consumer.* key: the
    broker address comes from the worker, as for a classic sink."""
    cfg = {
        "name": name,
        "connector.class": SHARE_SINK,
        "share.sink.connector.class": sink_class,
        "topics": topics,
        "tasks.max": str(tasks),
    }
    cfg.update({k: str(v) for k, v in extra.items()})
    return cfg


SHARE_FLAG = "consumer.override.group.protocol"


def flag_config(name: str, topics: str, sink_class: str, tasks: int,
                **extra: Any) -> Dict[str, str]:
    """The KIP's form of a share-mode connector: the legacy sink's own connector.class and
    consumer.override.group.protocol=share (needs sharesink's REST extension on the worker, which
    the harness enables); no share.* key, the broker address comes from the worker."""
    cfg = {
        "name": name,
        "connector.class": sink_class,
        SHARE_FLAG: "share",
        "topics": topics,
        "tasks.max": str(tasks),
    }
    cfg.update({k: str(v) for k, v in extra.items()})
    return cfg


def stored_config(cluster: Cluster, name: str, attempts: int = 3) -> Optional[Dict[str, str]]:
    """The connector's configuration as the worker stored it, read from the config topic (the
    REST API shows it through sharesink's extension, this does not); None if not found. The
    console consumer reads the records the topic holds now (its end offset: the worker wrote
    the connector's record before its REST call returned) and stops; if it got fewer it stops
    after a quiet period, which its group join can eat on a loaded machine: a read that saw no
    record of the connector is tried again."""
    from harness.cluster import CONSOLE_CONSUMER
    for _ in range(attempts):
        # The config topic is compacted, but its segments never roll in a test run: every
        # offset below the end holds a record.
        records = sum(cluster.end_offsets("connect-configs").values())
        p = cluster.run_tool(CONSOLE_CONSUMER, "--bootstrap-server", cluster.bootstrap,
                             "--topic", "connect-configs", "--from-beginning",
                             "--max-messages", max(records, 1), "--timeout-ms", 20000,
                             "--formatter-property", "print.key=true",
                             "--formatter-property", "key.separator=\x1d",
                             check=False, timeout=120)
        seen, found = False, None
        # split("\n"), not splitlines(): that also splits at the \x1d separator.
        for line in p.stdout.split("\n"):
            key, _, value = line.partition("\x1d")
            if key == f"connector-{name}":
                seen = True
                found = json.loads(value)["properties"] if value.strip() not in ("", "null") else None
        if seen:
            return found
    print(f"(no record of connector-{name} in connect-configs; console consumer rc="
          f"{p.returncode}, keys {[l.partition(chr(29))[0] for l in p.stdout.split(chr(10))][:20]}, "
          f"stderr: {p.stderr[-1500:]})")
    return None


def group_of(name: str) -> str:
    return f"connect-share-{name}"


def connector_trace(rest: Rest, name: str) -> str:
    try:
        st = rest.connector_status(name)
    except RestError as e:
        return f"(status: {e})"
    out = [f"connector {st.get('connector', {}).get('state')} on {st.get('connector', {}).get('worker_id')}"]
    if st.get("connector", {}).get("trace"):
        out.append(st["connector"]["trace"][:3000])
    for t in st.get("tasks", []):
        out.append(f"task {t.get('id')} {t.get('state')} on {t.get('worker_id')}")
        if t.get("trace"):
            out.append(t["trace"][:3000])
    return "\n".join(out)


def task_states(rest: Rest, name: str) -> Dict[int, str]:
    try:
        st = rest.connector_status(name)
    except RestError:
        return {}
    return {t["id"]: t["state"] for t in st.get("tasks", [])}


def failed_task_trace(rest: Rest, name: str) -> Optional[str]:
    try:
        st = rest.connector_status(name)
    except RestError:
        return None
    if st.get("connector", {}).get("state") == "FAILED":
        return st["connector"].get("trace") or "connector FAILED"
    for t in st.get("tasks", []):
        if t.get("state") == "FAILED":
            return t.get("trace") or f"task {t['id']} FAILED"
    return None


def assert_no_failed_task(rest: Rest, name: str) -> None:
    trace = failed_task_trace(rest, name)
    if trace:
        pytest.fail(f"connector {name} has a FAILED part:\n{trace[:4000]}", pytrace=False)


def start_connector(rest: Rest, name: str, config: Mapping[str, Any], tasks: Optional[int] = None,
                    timeout: float = 120) -> dict:
    rest.put_connector(name, config)
    try:
        return rest.wait_connector_running(name, tasks=tasks, timeout=timeout)
    except Exception as e:  # HarnessError: show it as a test failure with the trace
        pytest.fail(f"connector {name} did not start: {e}", pytrace=False)


def delete_connector(rest: Rest, name: str) -> None:
    try:
        rest.delete_connector(name)
    except Exception as e:  # noqa: BLE001 - cleanup
        print(f"(could not delete connector {name}: {e})")


def stop_connector(rest: Rest, name: str, timeout: float = 60) -> None:
    """PUT /connectors/<name>/stop (KIP-875) and wait for STOPPED: tasks end their sessions."""
    rest._retry_busy(lambda: rest.put(f"/connectors/{name}/stop"))
    wait_for(f"connector {name} STOPPED",
             lambda: rest.connector_status(name).get("connector", {}).get("state") == "STOPPED",
             timeout=timeout)


# ----------------------------------------------------------------------------------------------
# share group inspection (Kafka's ShareGroupCommand)


def share_group_offsets(cluster: Cluster, group: str) -> Dict[tuple, Dict[str, Optional[int]]]:
    """{(topic, partition): {'start': start offset, 'lag': lag}} from
    `ShareGroupCommand --describe --offsets`; {} when the group has no offsets yet."""
    p = cluster.run_tool(SHARE_GROUP_COMMAND, "--bootstrap-server", cluster.bootstrap,
                         "--describe", "--group", group, "--offsets", check=False, timeout=120)
    res: Dict[tuple, Dict[str, Optional[int]]] = {}
    header: Optional[List[str]] = None
    for line in p.stdout.splitlines():
        cols = line.split()
        if not cols:
            continue
        if cols[0] == "GROUP":
            header = cols
            continue
        if header is None or len(cols) < 3:
            continue
        row = dict(zip(header, cols))
        try:
            part = int(row.get("PARTITION", ""))
        except ValueError:
            continue

        def num(k):
            v = row.get(k)
            return int(v) if v is not None and v.lstrip("-").isdigit() else None

        res[(row.get("TOPIC"), part)] = {"start": num("START-OFFSET"), "lag": num("LAG")}
    return res


def settled_share_group_offsets(cluster: Cluster, group: str, timeout: float = 30,
                                interval: float = 2) -> Dict[tuple, Dict[str, Optional[int]]]:
    """share_group_offsets, read again until every partition reports a start offset and a lag,
    or `timeout` passes (then the last answer, gaps included). The broker answers "-" for a
    partition whose share state it could not read at that moment: seen once in CI for one
    partition of a topic created while the group ran, with every record of it delivered and
    none left in the group. Call it once the connector is gone."""
    budget = Budget(timeout)
    while True:
        offsets = share_group_offsets(cluster, group)
        complete = offsets and all(v["start"] is not None and v["lag"] is not None
                                   for v in offsets.values())
        if complete or budget.spent():
            if not complete:
                print(f"(share group {group}: offsets still incomplete after {timeout}s: {offsets})")
            return offsets
        time.sleep(interval)


def accepted_upper_bound(offsets: Mapping[tuple, Mapping[str, Optional[int]]]) -> int:
    """Sum of the share-partition start offsets: every record below its partition's start
    offset has been acknowledged (ACCEPTed, or archived) by the group."""
    return sum(v["start"] or 0 for v in offsets.values() if v["start"] is not None and v["start"] >= 0)


def total_lag(offsets: Mapping[tuple, Mapping[str, Optional[int]]]) -> Optional[int]:
    lags = [v["lag"] for v in offsets.values()]
    if not lags or any(l is None for l in lags):
        return None
    return sum(lags)


def drain_group(cluster: Cluster, topic: str, group: str, expect_at_most: int,
                timeout_ms: int = 15000) -> int:
    """Records still available to `group` (consumed and ACCEPTed by Kafka's own share
    consumer, so call it only once the connector is gone)."""
    r = cluster.share_consume(topic, group, max(expect_at_most, 1), timeout_ms=timeout_ms,
                              check=False)
    return r["records"] or 0


# ----------------------------------------------------------------------------------------------
# producing


def produce_values(cluster: Cluster, topic: str, values: Sequence[str],
                   keys: Optional[Sequence[Optional[str]]] = None,
                   headers: Optional[Sequence[Optional[Mapping[str, str]]]] = None,
                   chunk: int = 200_000) -> int:
    n = 0
    for i in range(0, len(values), chunk):
        n += cluster.produce(topic, list(values[i:i + chunk]),
                             keys=list(keys[i:i + chunk]) if keys is not None else None,
                             headers=list(headers[i:i + chunk]) if headers is not None else None)
    return n


class LiveProducer:
    """One Kafka console producer kept running, so a test can produce records at a precise
    moment without starting a JVM each time (`--sync`: each record is acknowledged by the broker
    before the next line is read); `send()` writes lines to it. close() returns its exit code."""

    def __init__(self, cluster: Cluster, topic: str):
        cmd = cluster.java_cmd(CONSOLE_PRODUCER, [
            "--bootstrap-server", cluster.bootstrap, "--topic", topic, "--sync",
            "--command-property", "acks=all", "--command-property", "linger.ms=0"], heap="256m")
        self.topic = topic
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.sent = 0

    def send(self, values: Sequence[str]) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"console producer exited {self.proc.returncode}: "
                               f"{self.proc.stderr.read()[-2000:]}")
        for v in values:
            assert "\n" not in v
            self.proc.stdin.write(v + "\n")
        self.proc.stdin.flush()
        self.sent += len(values)

    def close(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


ROW_KEY_SCHEMA = {"type": "struct", "optional": False, "name": "sharesink.e2e.Key",
                  "fields": [{"field": "id", "type": "int64", "optional": False}]}
ROW_VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "sharesink.e2e.Row",
                    "fields": [{"field": "id", "type": "int64", "optional": False},
                               {"field": "name", "type": "string", "optional": True},
                               {"field": "seq", "type": "int64", "optional": False}]}


def row_key(i: int) -> str:
    return json.dumps({"schema": ROW_KEY_SCHEMA, "payload": {"id": i}}, separators=(",", ":"))


def row_value(i: int, seq: int = 1, name: Optional[str] = None) -> str:
    return json.dumps({"schema": ROW_VALUE_SCHEMA,
                       "payload": {"id": i, "name": name or f"row-{i}", "seq": seq}},
                      separators=(",", ":"))


def produce_rows(cluster: Cluster, topic: str, ids: Iterable[int], seq: int = 1) -> int:
    ids = list(ids)
    return produce_values(cluster, topic, [row_value(i, seq) for i in ids],
                          keys=[row_key(i) for i in ids])


# ----------------------------------------------------------------------------------------------
# sinks' outputs


def file_lines(path: Path) -> List[str]:
    if not path.exists():
        return []
    data = path.read_bytes().decode("utf-8", "replace")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def file_line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def jdbc_config(pg: Mapping[str, Any], **extra: Any) -> Dict[str, str]:
    """Debezium JDBC sink settings for the harness PostgreSQL; table = topic name."""
    cfg = {
        "connection.url": pg["jdbc_url"],
        "connection.username": pg["user"],
        "connection.password": pg["password"],
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "primary.key.fields": "id",
        "schema.evolution": "basic",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "true",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "true",
    }
    cfg.update({k: str(v) for k, v in extra.items()})
    return cfg


def pg_scalar(cluster: Cluster, sql: str, db: str = "sharesink",
              default: Optional[int] = None) -> Optional[int]:
    out = cluster.psql(sql, db=db, check=False).strip()
    try:
        return int(out.splitlines()[-1])
    except (ValueError, IndexError):
        return default


def pg_rows(cluster: Cluster, table: str) -> int:
    """count(*) of a table; 0 when it does not exist (yet) or PostgreSQL is down."""
    return pg_scalar(cluster, f'SELECT count(*) FROM "{table}"', default=0) or 0


def pg_distinct_ids(cluster: Cluster, table: str) -> int:
    return pg_scalar(cluster, f'SELECT count(DISTINCT id) FROM "{table}"', default=0) or 0


class Sampler(threading.Thread):
    """Samples `read()` every `interval` s in the background: [(t, value)]."""

    def __init__(self, read: Callable[[], Any], interval: float = 0.5):
        super().__init__(daemon=True)
        self.read, self.interval = read, interval
        self.samples: List[tuple] = []
        self._stop_ev = threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self._stop_ev.is_set():
            try:
                v = self.read()
            except Exception as e:  # noqa: BLE001
                v = e
            self.samples.append((time.monotonic() - self.t0, v))
            self._stop_ev.wait(self.interval)

    def stop(self):
        self._stop_ev.set()
        self.join(timeout=30)
        return self.samples


CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


def share_console_consume(cluster: Cluster, topic: str, group: str, max_messages: int,
                          timeout_ms: int = 10000, print_headers: bool = False) -> List[str]:
    """Values (headers\\tvalue with print_headers) that Kafka's own console share consumer gets
    from `group` (it ACCEPTs them). Call it only once the connector is gone."""
    args = ["--bootstrap-server", cluster.bootstrap, "--topic", topic, "--group", group,
            "--max-messages", max(max_messages, 1), "--timeout-ms", timeout_ms]
    if print_headers:
        args += ["--formatter-property", "print.headers=true"]
    p = cluster.run_tool(CONSOLE_SHARE_CONSUMER, *args, check=False,
                         timeout=timeout_ms / 1000 + 120)
    return [l for l in p.stdout.splitlines() if l.strip()]


def pg_waiting_on_locks(cluster: Cluster) -> int:
    """Backends of database sharesink waiting on a heavyweight lock (e.g. a row lock)."""
    return pg_scalar(cluster, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'sharesink' "
                              "AND wait_event_type = 'Lock'", db="postgres", default=0) or 0


def stop_worker_if_running(cluster: Cluster, index: int) -> None:
    if cluster.is_running(f"worker-{index}"):
        cluster.stop_worker(index)


def consume_with_headers(cluster: Cluster, topic: str, max_messages: int,
                         timeout_ms: int = 8000) -> List[tuple]:
    """[(headers {key: value}, value)] read from the beginning with the classic console consumer,
    with control-character separators (header values such as stack traces hold tabs,
    newlines and commas)."""
    from harness.cluster import CONSOLE_CONSUMER
    rec, field, hdr = "\x1e", "\x1d", "\x1f"
    p = cluster.run_tool(CONSOLE_CONSUMER, "--bootstrap-server", cluster.bootstrap, "--topic", topic,
                         "--from-beginning", "--max-messages", max_messages,
                         "--timeout-ms", timeout_ms,
                         "--formatter-property", "print.headers=true",
                         "--formatter-property", f"key.separator={field}",
                         "--formatter-property", f"line.separator={rec}",
                         "--formatter-property", f"headers.separator={hdr}",
                         check=False, timeout=timeout_ms / 1000 + 60)
    out = []
    for r in p.stdout.split(rec):
        if not r.strip():
            continue
        h, _, v = r.partition(field)
        headers = {}
        if h != "NO_HEADERS":
            for item in h.split(hdr):
                k, _, hv = item.partition(":")
                headers[k] = hv
        out.append((headers, v))
    return out


# ---- Prometheus series, as the JMX exporter's agent serves them (ops/prometheus/jmx-exporter.yaml)

_SAMPLE = re.compile(r"^((?:sharesink|kafka_connect)_[a-z0-9_]+)\{([^}]*)\}\s+(\S+)")


def scrape(port: int) -> Dict[str, List[Tuple[Dict[str, str], float]]]:
    """sharesink's and Connect's series of the agent's /metrics: name -> [(labels, value)]."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    series: Dict[str, List[Tuple[Dict[str, str], float]]] = defaultdict(list)
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            series[m.group(1)].append((labels, float(m.group(3))))
    return series


def total(series, name: str, connector: str) -> float:
    """The sum of `name` over the tasks of `connector`."""
    return sum(v for labels, v in series.get(name, []) if labels.get("connector") == connector)
