"""Kafka's command-line tools, run as ``java -cp '<lib>/*' <MainClass>``: topics, configs,
features, leaders and replicas, producing and consuming."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
import tempfile
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from harness.artifacts import cache_dir, ensure_kafka_lib
from harness.common import ClassArchiveAtExit, HarnessError, _java, _write_atomic
from harness.kafka_wire import KafkaWire
from harness.waits import Budget

# Main classes of Kafka 4.4.0 (checked with `unzip -l` on the resolved jars).
STORAGE_TOOL = "kafka.tools.StorageTool"
FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
# Where ConfigCommand lived before it moved to the tools module (Kafka 4.3 and older).
CONFIG_COMMAND_BEFORE_4_4 = "kafka.admin.ConfigCommand"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
SHARE_CONSUMER_PERF = "org.apache.kafka.tools.ShareConsumerPerformance"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
LEADER_ELECTION_COMMAND = "org.apache.kafka.tools.LeaderElectionCommand"
ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
GET_OFFSET_SHELL = "org.apache.kafka.tools.GetOffsetShell"

# What the console producer's ErrorLoggingCallback logs (ERROR) for a record it gave up on.
SEND_ERROR = "Error when sending message to topic"

TOOLS_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="STDERR" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="WARN"><AppenderRef ref="STDERR"/></Root>
  </Loggers>
</Configuration>
"""


# How long a tool may run with no broker process alive before it is stopped (wall seconds): far
# longer than a broker's restart leaves none running.
BROKERS_GONE_S = 60.0


class BrokersGone(Exception):
    def __init__(self, stderr: str):
        super().__init__("no broker running")
        self.stderr = stderr


def communicate_watching(proc: subprocess.Popen, input: Optional[str], timeout: float,
                         gone: Callable[[], bool], gone_for: float, interval: float = 1.0,
                         clock: Callable[[], float] = time.monotonic) -> Tuple[str, str]:
    """`proc.communicate(input, timeout)`, checking `gone()` every `interval` s: once it has
    been true for `gone_for` s the process is killed and BrokersGone raised. On the timeout the
    process is killed and subprocess.TimeoutExpired raised (with what it wrote), as
    subprocess.run does."""
    t0 = clock()
    gone_since: Optional[float] = None
    while True:
        try:
            # communicate() may be called again after a TimeoutExpired without losing output;
            # the input is sent by the first call only.
            out, err = proc.communicate(input, timeout=interval)
            return out, err
        except subprocess.TimeoutExpired:
            input = None
        now = clock()
        if gone():
            gone_since = now if gone_since is None else gone_since
            if now - gone_since >= gone_for:
                proc.kill()
                out, err = proc.communicate()
                raise BrokersGone(err or "")
        else:
            gone_since = None
        if now - t0 >= timeout:
            proc.kill()
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err)


class KafkaTools:
    """Kafka's tool classes on the Kafka class path, against the cluster's brokers: a service
    object that owns the Kafka jars (resolved by `kafka_lib` on first use), its log4j2 file under
    ``state_dir/config`` and the command lines of every Java process of the cluster
    (``java_cmd``). `bootstrap` and `replication` are the cluster's (PLAINTEXT bootstrap, the
    replication factor of new topics); `brokers_running` tells whether a broker of the cluster
    runs (a tool that outlives every broker is stopped, see run_tool)."""

    def __init__(self, state_dir: Path, bootstrap: str, replication: int,
                 brokers_running: Optional[Callable[[], bool]] = None,
                 kafka_lib: Callable[[], Path] = ensure_kafka_lib):
        self.state_dir = state_dir
        self.bootstrap = bootstrap
        self.replication = replication
        self._brokers_running = brokers_running
        self._resolve_kafka_lib = kafka_lib
        self._kafka_lib: Optional[Path] = None

    @property
    def kafka_lib(self) -> Path:
        """Kafka's jars (resolved into the cache on first use)."""
        if self._kafka_lib is None:
            self._kafka_lib = self._resolve_kafka_lib()
        return self._kafka_lib

    @property
    def classpath(self) -> str:
        return str(self.kafka_lib / "*")

    @functools.cached_property
    def config_command(self) -> str:
        """ConfigCommand's class in these jars: the tools module's since Kafka 4.4, the core's
        before (an older release's cluster, SHARESINK_KAFKA_VERSION)."""
        wanted = CONFIG_COMMAND.replace(".", "/") + ".class"
        for jar in sorted(self.kafka_lib.glob("kafka-tools-*.jar")):
            with zipfile.ZipFile(jar) as z:
                if wanted in z.namelist():
                    return CONFIG_COMMAND
        return CONFIG_COMMAND_BEFORE_4_4

    def java_cmd(self, main_class: str, args: Sequence[str] = (), *, heap: str = "512m",
                 jvm_opts: Sequence[str] = (), log4j2: Optional[Path] = None,
                 classpath: Sequence[Path] = ()) -> List[str]:
        cmd = [_java(), f"-Xmx{heap}", "-Djava.awt.headless=true"]
        if log4j2 is None:
            log4j2 = self.log4j2_file()
        cmd.append(f"-Dlog4j2.configurationFile={log4j2}")
        cmd += list(jvm_opts)
        cp = os.pathsep.join([self.classpath] + [str(Path(d) / "*") for d in classpath])
        cmd += ["-cp", cp, main_class] + [str(a) for a in args]
        return cmd

    def log4j2_file(self) -> Path:
        """The tools' log4j2 configuration (warnings and errors to stderr)."""
        p = self.state_dir / "config" / "tools-log4j2.xml"
        if not p.exists():
            _write_atomic(p, TOOLS_LOG4J2)
        return p

    @functools.cached_property
    def _java_identity(self) -> str:
        java = _java()
        version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        return f"{java}\n{version}"

    def class_archive(self, role: str, classpath: Sequence[Path] = ()) -> Optional[Path]:
        """Where the class-data archive (AppCDS) of one kind of JVM on Kafka's class path is kept
        (`role`: tools, broker, worker; each loads its own classes), for this JVM, these jars and
        the jars of `classpath`'s dirs; None when SHARESINK_CDS (or SHARESINK_TOOLS_CDS) is off.
        A JVM that starts mostly loads classes: with the archive a tool took half the CPU and a
        third of the wall time on the loaded machine (TopicCommand --list under the three-broker
        stage: 0.8 against 1.6 s of CPU, 2.8-5.4 against 8.7-10.4 s), a Connect worker 7 against
        10 s of CPU and of wall time to its REST API; the tests start hundreds of tools and dozens
        of workers and brokers."""
        if "off" in (os.environ.get("SHARESINK_CDS"), os.environ.get("SHARESINK_TOOLS_CDS")):
            return None
        jars = sorted(p.name for p in self.kafka_lib.glob("*.jar"))
        extra = [f"{d}:{','.join(sorted(p.name for p in Path(d).glob('*.jar')))}"
                 for d in classpath]
        key = hashlib.sha256("\n".join([self._java_identity, role, str(self.kafka_lib)]
                                        + jars + extra).encode())
        return cache_dir() / "cds" / f"kafka-{role}-{key.hexdigest()[:20]}.jsa"

    def class_archive_opts(self, role: str, classpath: Sequence[Path] = ()
                           ) -> Tuple[List[str], Optional[ClassArchiveAtExit]]:
        """The JVM options that use the archive (its logging off: an archive the JVM cannot map
        is ignored), or that write it at exit when there is none yet: (options, the archive being
        written, to be kept once the JVM exited cleanly). Only a speed-up: a JVM without it runs
        the same."""
        archive = self.class_archive(role, classpath)
        if archive is None:
            return [], None
        if archive.is_file():
            return [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"], None
        archive.parent.mkdir(parents=True, exist_ok=True)
        writing = archive.parent / f".{archive.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        return ([f"-XX:ArchiveClassesAtExit={writing}", "-Xlog:cds*=off"],
                ClassArchiveAtExit(writing, archive))

    def run_tool(self, main_class: str, *args: Any, check: bool = True, timeout: float = 120,
                 input: Optional[str] = None, stdin=None, heap: str = "512m",
                 jvm_opts: Sequence[str] = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
                 ) -> subprocess.CompletedProcess:
        """Run a Kafka tool class on the Kafka classpath; text output (stdout, stderr)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        archive_opts, at_exit = self.class_archive_opts("tools")
        cmd = self.java_cmd(main_class, [str(a) for a in args], heap=heap,
                            jvm_opts=list(jvm_opts) + archive_opts)
        # A tool that retries until a broker answers (ProducerPerformance retries for ever) waits
        # out its whole timeout when every broker has exited (a full disk): give up on it once no
        # broker process has run for BROKERS_GONE_S, if one ran when it started.
        running = self._brokers_running
        gone = (lambda: not running()) if running is not None and running() else (lambda: False)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        kept = False
        try:
            out, err = communicate_watching(proc, input, timeout, gone, BROKERS_GONE_S)
            if at_exit is not None and proc.returncode == 0:
                kept = at_exit.keep()
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"{main_class} timed out after {timeout}s: {shlex.join(cmd)}\n"
                               f"stdout: {(e.stdout or '')[-2000:]}\nstderr: {(e.stderr or '')[-2000:]}"
                               ) from e
        except BrokersGone as e:
            raise HarnessError(f"{main_class} stopped: no broker of the cluster has run for "
                               f"{BROKERS_GONE_S:.0f}s (their logs: {self.state_dir / 'logs'}): "
                               f"{shlex.join(cmd)}\nstderr: {e.stderr[-2000:]}") from None
        finally:
            if at_exit is not None and not kept:
                at_exit.discard()  # a failed or stopped tool's archive: none
        proc = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        if check and proc.returncode != 0:
            raise HarnessError(f"{main_class} exited {proc.returncode}: {' '.join(map(str, args))}\n"
                               f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}")
        return proc

    # ---- leaders and replicas (several brokers)

    def describe_topic(self, topic: str) -> Dict[int, Dict[str, Any]]:
        """{partition: {'leader': node id (-1 none), 'replicas': [...], 'isr': [...]}} from
        TopicCommand --describe."""
        out = self.run_tool(TOPIC_COMMAND, "--bootstrap-server", self.bootstrap, "--describe",
                            "--topic", topic).stdout
        res: Dict[int, Dict[str, Any]] = {}

        def ids(s):
            return [int(x) for x in s.split(",") if x.strip().lstrip("-").isdigit()]

        for line in out.splitlines():
            fields = dict(re.findall(r"(\w+):\s*(\S*)", line))
            if "Partition" not in fields or not fields["Partition"].isdigit():
                continue
            leader = fields.get("Leader", "-1")
            res[int(fields["Partition"])] = {
                "leader": int(leader) if leader.lstrip("-").isdigit() else -1,
                "replicas": ids(fields.get("Replicas", "")),
                "isr": ids(fields.get("Isr", "")),
            }
        return res

    def leaders(self, topic: str) -> Dict[int, int]:
        """{partition: leader node id}; node id i + 1 is broker index i."""
        return {p: d["leader"] for p, d in self.describe_topic(topic).items()}

    def broker_index(self, node_id: int) -> int:
        return node_id - 1

    def elect_leaders(self, topic: Optional[str] = None, partitions: Optional[Iterable[int]] = None,
                      election: str = "preferred") -> str:
        """Leader election (`preferred` or `unclean`) for `topic`'s partitions (all of them, or
        `partitions`), or for every partition of the cluster when `topic` is None."""
        args = ["--bootstrap-server", self.bootstrap, "--election-type", election.upper()]
        if topic is None:
            args.append("--all-topic-partitions")
        else:
            ps = list(partitions) if partitions is not None else sorted(self.describe_topic(topic))
            path = self.state_dir / f"elect-{uuid.uuid4().hex[:8]}.json"
            _write_atomic(path, json.dumps({"partitions": [{"topic": topic, "partition": p}
                                                           for p in ps]}))
            args += ["--path-to-json-file", path]
        p = self.run_tool(LEADER_ELECTION_COMMAND, *args, check=False, timeout=120)
        if p.returncode != 0 and "ElectionNotNeeded" not in p.stdout + p.stderr:
            raise HarnessError(f"leader election failed: {p.stdout}{p.stderr}")
        return p.stdout

    def reassign_partitions(self, topic: str, replicas: Mapping[int, Sequence[int]],
                            timeout: float = 120) -> None:
        """Move `topic`'s partitions to the given replica lists (node ids, the first is the
        preferred leader) and wait until the reassignment is complete."""
        plan = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": list(r)}
                                             for p, r in replicas.items()]}
        path = self.state_dir / f"reassign-{uuid.uuid4().hex[:8]}.json"
        _write_atomic(path, json.dumps(plan))
        self.run_tool(REASSIGN_COMMAND, "--bootstrap-server", self.bootstrap,
                      "--reassignment-json-file", path, "--execute", timeout=120)
        budget = Budget(timeout)
        while True:
            out = self.run_tool(REASSIGN_COMMAND, "--bootstrap-server", self.bootstrap,
                                "--reassignment-json-file", path, "--verify", check=False,
                                timeout=120).stdout
            if "is still in progress" not in out and "complete" in out:
                return
            if budget.spent():
                raise HarnessError(f"reassignment of {topic} not complete after "
                                   f"{budget.describe()}:\n{out}")
            time.sleep(1)

    def wait_in_sync(self, topic: str, timeout: float = 120) -> None:
        """Waits until every replica of every partition of `topic` is in sync and led (`timeout`:
        machine seconds, harness/waits.py's Budget)."""
        budget = Budget(timeout)
        while True:
            d = self.describe_topic(topic)
            if d and all(v["leader"] >= 0 and sorted(v["isr"]) == sorted(v["replicas"])
                         for v in d.values()):
                return
            if budget.spent():
                raise HarnessError(f"{topic} not in sync after {budget.describe()}: {d}")
            time.sleep(1)

    # ---- Kafka admin helpers (through the Kafka tools)

    def features(self, full: bool = False) -> Dict[str, Any]:
        """Finalized feature levels, e.g. {'share.version': 2, 'metadata.version': '4.4-IV2'}."""
        out = self.run_tool(FEATURE_COMMAND, "--bootstrap-server", self.bootstrap, "describe").stdout
        res: Dict[str, Any] = {}
        for line in out.splitlines():
            parts = dict()
            toks = line.replace("\t", " ").split()
            i = 0
            while i < len(toks) - 1:
                if toks[i].endswith(":"):
                    parts[toks[i][:-1]] = toks[i + 1]
                    i += 2
                else:
                    i += 1
            if "Feature" not in parts:
                continue
            lvl = parts.get("FinalizedVersionLevel")
            val: Any = int(lvl) if lvl is not None and lvl.lstrip("-").isdigit() else lvl
            res[parts["Feature"]] = parts if full else val
        return res

    # Topics and end offsets through the wire (harness/kafka_wire.py): TopicCommand's JVM per
    # call was most of the e2e stage's tool CPU.
    def create_topic(self, name: str, partitions: int = 1,
                     config: Optional[Mapping[str, Any]] = None) -> None:
        """Creates `name` unless it exists (`kafka-topics --create --if-not-exists`)."""
        KafkaWire(self.bootstrap).create_topic(name, partitions, self.replication, config)

    def delete_topic(self, name: str) -> None:
        KafkaWire(self.bootstrap).delete_topic(name)

    def list_topics(self) -> List[str]:
        return KafkaWire(self.bootstrap).list_topics()

    # Group and broker configs through the wire (harness/kafka_wire.py), as ConfigCommand sets
    # and describes them, without its JVM.
    def set_group_config(self, group: str, config: Mapping[str, Any]) -> None:
        KafkaWire(self.bootstrap).alter_configs("groups", group, set_=config)

    def delete_group_config(self, group: str, keys: Iterable[str]) -> None:
        KafkaWire(self.bootstrap).alter_configs("groups", group, delete=list(keys))

    def describe_configs(self, entity_type: str, name: str) -> Dict[str, str]:
        """Every config of a group, topic or broker, defaults included, as {key: value} (a
        value without one, or sensitive, as "null", as ConfigCommand --describe --all shows
        it)."""
        return {k: "null" if v is None else v
                for k, v in KafkaWire(self.bootstrap).describe_configs(entity_type, name).items()}

    def allow_group_prefix(self, principal: str, prefix: str) -> None:
        """An ACL (broker with authorizer=True): `principal` (e.g. User:tenant-a) may do every
        operation on the groups whose id starts with `prefix`; from then on nobody else may
        (but super users), those groups having ACLs."""
        self.run_tool(ACL_COMMAND, "--bootstrap-server", self.bootstrap, "--add",
                      "--allow-principal", principal, "--operation", "All",
                      "--group", prefix, "--resource-pattern-type", "prefixed")

    def allow_topic_prefix(self, principal: str, prefix: str) -> None:
        """An ACL (broker with authorizer=True): `principal` may do every operation on the topics
        whose name starts with `prefix`; from then on nobody else may (but super users), not even
        see them."""
        self.run_tool(ACL_COMMAND, "--bootstrap-server", self.bootstrap, "--add",
                      "--allow-principal", principal, "--operation", "All",
                      "--topic", prefix, "--resource-pattern-type", "prefixed")

    def set_broker_config(self, config: Mapping[str, Any]) -> None:
        """Dynamic cluster-wide broker config (e.g. errors.deadletterqueue.*)."""
        KafkaWire(self.bootstrap).alter_configs("brokers", "", set_=config)

    def produce(self, topic: str, values: Union[int, Iterable[Union[str, bytes, None]]],
                keys: Optional[Iterable[Union[str, bytes, None]]] = None,
                headers: Optional[Iterable[Optional[Mapping[str, str]]]] = None, *,
                record_size: int = 100, producer_props: Optional[Mapping[str, Any]] = None,
                timeout: float = 600) -> int:
        """Produce records; returns how many.

        `values` as a list of strings: exactly those records, in order (None = null value/key),
        through the wire (`_produce_wire`), or with `producer_props` through the console
        producer (then no newlines in keys, values or headers). `values` as an int N: N
        generated records of `record_size` bytes, through the producer perf tool (1e6 records
        take seconds)."""
        # retries: the console producer's own default is 3 (100 ms apart), which gives up on a
        # batch while a leader moves; the client's default retries until delivery.timeout.ms.
        props = {"acks": "all", "linger.ms": 5, "batch.size": 262144,
                 "compression.type": "none", "retries": 2147483647}
        props.update(producer_props or {})
        if isinstance(values, int):
            n = values
            args = ["--topic", topic, "--num-records", n, "--record-size", record_size,
                    "--throughput", -1, "--producer-props", f"bootstrap.servers={self.bootstrap}"]
            args += [f"{k}={v}" for k, v in props.items()]
            self.run_tool(PRODUCER_PERF, *args, timeout=timeout, heap="1g", jvm_opts=())
            return n
        vals = list(values)
        ks = list(keys) if keys is not None else None
        hs = list(headers) if headers is not None else None
        if ks is not None and len(ks) != len(vals):
            raise ValueError("keys and values differ in length")
        if hs is not None and len(hs) != len(vals):
            raise ValueError("headers and values differ in length")
        if not producer_props:
            return self._produce_wire(topic, vals, ks, hs, timeout)
        ksep, hdelim, hsep, hksep, null = "\x1f", "\x1e", "\x1d", "\x1c", "\x1a"

        def s(x, what):
            if x is None:
                return null
            x = x.decode() if isinstance(x, bytes) else str(x)
            if "\n" in x or "\r" in x or any(c in x for c in (ksep, hdelim, hsep, hksep, null)):
                raise ValueError(f"{what} {x!r} contains a newline or a separator character")
            return x

        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".records",
                                         dir=self.state_dir, delete=False) as f:
            for i, v in enumerate(vals):
                line = ""
                if hs is not None:
                    h = hs[i] or {}
                    line += hsep.join(f"{s(k, 'header key')}{hksep}{s(hv, 'header value')}"
                                      for k, hv in h.items()) if h else null
                    line += hdelim
                if ks is not None:
                    line += s(ks[i], "key") + ksep
                line += s(v, "value")
                f.write(line + "\n")
            path = f.name
        try:
            args = ["--bootstrap-server", self.bootstrap, "--topic", topic,
                    "--reader-property", f"null.marker={null}"]
            if ks is not None:
                args += ["--reader-property", "parse.key=true", "--reader-property", f"key.separator={ksep}"]
            if hs is not None:
                args += ["--reader-property", "parse.headers=true",
                         "--reader-property", f"headers.delimiter={hdelim}",
                         "--reader-property", f"headers.separator={hsep}",
                         "--reader-property", f"headers.key.separator={hksep}",
                         "--reader-property", "ignore.error=false"]
            for k, v in props.items():
                args += ["--command-property", f"{k}={v}"]
            with open(path, "rb") as inp:
                proc = self.run_tool(CONSOLE_PRODUCER, *args, stdin=inp, timeout=timeout,
                                     heap="1g", jvm_opts=())
            # Without --sync the console producer logs a record it could not send and still
            # exits 0: such a record is not in the log, so this produce did not happen.
            dropped = proc.stderr.count(SEND_ERROR)
            if dropped:
                raise HarnessError(f"console producer could not send {dropped} of {len(vals)} "
                                   f"records to {topic}: {proc.stderr[-3000:]}")
        finally:
            os.unlink(path)
        return len(vals)

    def _produce_wire(self, topic: str, vals: List[Union[str, bytes, None]],
                      ks: Optional[List[Union[str, bytes, None]]],
                      hs: Optional[List[Optional[Mapping[str, str]]]], timeout: float) -> int:
        """The records through the wire (harness/kafka_wire.py): what the console producer
        writes for them (UTF-8 strings, keys partitioned by Kafka's murmur2, idempotent,
        acks=all), without a JVM per call."""

        def b(x):
            return None if x is None else x if isinstance(x, bytes) else str(x).encode()

        records = []
        for i, v in enumerate(vals):
            h = (hs[i] or {}) if hs is not None else {}
            records.append((b(ks[i]) if ks is not None else None, b(v),
                            [(b(hk), b(hv)) for hk, hv in h.items()]))
        return KafkaWire(self.bootstrap, timeout=timeout).producer().send(topic, records)

    def end_offsets(self, topic: str) -> Dict[int, int]:
        """{partition: log end offset (high watermark)} of `topic`."""
        return KafkaWire(self.bootstrap).end_offsets(topic)

    def consume(self, topic: str, max_messages: int, timeout_ms: int = 30000,
                from_beginning: bool = True, print_key: bool = False,
                print_headers: bool = False, group: Optional[str] = None) -> List[str]:
        """Read up to `max_messages` records with the classic console consumer; one string per
        record (key/headers prefixed and tab-separated when asked)."""
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic,
                "--max-messages", max_messages, "--timeout-ms", timeout_ms]
        if from_beginning:
            args.append("--from-beginning")
        if group:
            args += ["--group", group]
        if print_key:
            args += ["--formatter-property", "print.key=true"]
        if print_headers:
            args += ["--formatter-property", "print.headers=true"]
        p = self.run_tool(CONSOLE_CONSUMER, *args, check=False, timeout=timeout_ms / 1000 + 60)
        if p.returncode not in (0, 1) or "ERROR" in p.stderr and "TimeoutException" not in p.stderr:
            raise HarnessError(f"console consumer failed ({p.returncode}): {p.stderr[-3000:]}")
        return p.stdout.splitlines()

    def share_consume(self, topic: str, group: str, num_records: int, *, threads: int = 1,
                      timeout_ms: int = 60000, props: Optional[Mapping[str, Any]] = None,
                      check: bool = True) -> Dict[str, Any]:
        """Consume through the Java KafkaShareConsumer (ShareConsumerPerformance, implicit
        acknowledgement). Returns {'records': total consumed, 'stdout': ..., 'stderr': ...}.
        The tool stops after `num_records` or when `timeout_ms` passes without progress."""
        args = ["--bootstrap-server", self.bootstrap, "--topic", topic, "--group", group,
                "--num-records", num_records, "--timeout", timeout_ms, "--threads", threads]
        for k, v in (props or {}).items():
            args += ["--command-property", f"{k}={v}"]
        p = self.run_tool(SHARE_CONSUMER_PERF, *args, check=check,
                          timeout=timeout_ms / 1000 * 3 + 120, heap="1g", jvm_opts=())
        records = None
        header = None
        for line in p.stdout.splitlines():
            cols = [c.strip() for c in line.split(",")]
            if "data.consumed.in.nMsg" in cols:
                header = cols
            elif header and len(cols) >= len(header) and "for share consumer" not in line:
                with contextlib.suppress(ValueError):
                    records = int(cols[header.index("data.consumed.in.nMsg")])
        if records is None and check:
            raise HarnessError(f"cannot read the consumed count from ShareConsumerPerformance:\n"
                               f"{p.stdout}\n{p.stderr[-2000:]}")
        return {"records": records, "stdout": p.stdout, "stderr": p.stderr}
