"""The KRaft broker(s): one node (the default) or several in combined mode, their ports,
properties, storage format, start and stop."""

from __future__ import annotations

import base64
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional

from harness.artifacts import KAFKA_VERSION, _version
from harness.common import HarnessError, _log4j2, _port_open, _props, _write_atomic
from harness.procs import Processes
from harness.tls import SCRAM_PASSWORD, SCRAM_USER, TLS_PASSWORD, TlsMaterial
from harness.tools import STORAGE_TOOL, KafkaTools
from harness.waits import BOUND_S

if TYPE_CHECKING:  # proxy_control imports BrokerLayout from here
    from harness.proxy_control import Proxies

# share.version 2 (the broker's KIP-1191 dead letter queue) exists from Kafka 4.4 on; older
# brokers finalize 1, and sharesink's DLQ mode `auto` falls back to Connect's own DLQ there.
SHARE_VERSION = 2 if _version(KAFKA_VERSION) >= (4, 4) else 1

# Main classes of Kafka 4.4.0 (checked with `unzip -l` on the resolved jars).
BROKER_MAIN = "kafka.Kafka"

# The KRaft authorizer (ACLs in the metadata log), for start_broker(authorizer=True).
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# Port offsets from SHARESINK_PORT_BASE (DEVELOPING.md; tests/harness/README.md has them all): a
# worker's in connect.py, PostgreSQL's in postgres.py; +88 is taken by the tests' credential
# recorder (credential_recorder.py, OFF_CREDENTIAL_RECORDER).
OFF_BROKER = 92
OFF_CONTROLLER = 93
OFF_SASL_SSL = 94
# The broker's PROXIED listener, advertised as the blackhole proxy's port (tests/harness/proxy.py),
# so that clients bootstrapping there keep going through the proxy; and the proxy's control port.
OFF_PROXIED = 95
OFF_PROXY = 96
OFF_PROXY_CONTROL = 97
# Several brokers (`up --brokers 3`): broker i's ports are a block of its own, away from the
# single-broker offsets above: +100 + 10 i PLAINTEXT, +1 controller, +2 SASL_SSL, +3 PROXIED,
# +4 its blackhole proxy, +5 the proxy's control port.
OFF_MULTI_BROKERS = 100
MULTI_BROKER_STRIDE = 10
MAX_BROKERS = 5


def extra_broker_properties() -> Dict[str, str]:
    """SHARESINK_BROKER_PROPERTIES ("k=v,k=v"): broker settings added to (or replacing) the
    harness's, for an experiment on them (`bench/run.py --broker-config`)."""
    out: Dict[str, str] = {}
    for item in filter(None, os.environ.get("SHARESINK_BROKER_PROPERTIES", "").split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise HarnessError(f"SHARESINK_BROKER_PROPERTIES: {item!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


class BrokerPorts(NamedTuple):
    plaintext: int
    controller: int
    sasl_ssl: int
    proxied: int
    proxy: int
    proxy_control: int


BROKER_LOG4J2 = _log4j2("[%d] %p %m (%c)%n", "INFO", {
    "kafka.request.logger": "WARN",
    "kafka.log.LogCleaner": "WARN",
    "org.apache.kafka.storage.internals.log": "WARN",
    "kafka.log": "WARN",
    "state.change.logger": "WARN",
    "org.apache.kafka.controller": "INFO",
    "kafka.controller": "INFO",
})


def broker_meta_path(state_dir: Path) -> Path:
    """What a state dir's broker(s) were formatted and started with (cluster id, port base, how
    many, sasl_ssl, authorizer)."""
    return state_dir / "broker-meta.json"


def load_broker_meta(state_dir: Path) -> dict:
    try:
        return json.loads(broker_meta_path(state_dir).read_text())
    except (OSError, ValueError):
        return {}


class BrokerLayout:
    """Where `count` KRaft nodes listen, from `port_base`, and what they are called: a value the
    broker service, the proxies and the cluster share.

    One broker (the default): process "broker", offsets OFF_BROKER.. (DEVELOPING.md). Several
    (`brokers=3`, `up --brokers 3`): nodes "broker-0".."broker-<n-1>", each with its own block of
    ports (ports()) and its own blackhole proxy "proxy-<i>"."""

    def __init__(self, port_base: int, count: int):
        if not 1 <= count <= MAX_BROKERS:
            raise HarnessError(f"brokers={count}: 1 to {MAX_BROKERS}")
        self.port_base = port_base
        self.count = count
        every = [self.ports(i) for i in range(count)]
        self.bootstrap = ",".join(f"127.0.0.1:{p.plaintext}" for p in every)
        # Through the blackhole proxies; brokers advertise their proxy there.
        self.proxied_bootstrap = ",".join(f"127.0.0.1:{p.proxy}" for p in every)
        self.sasl_ssl_bootstrap = ",".join(f"127.0.0.1:{p.sasl_ssl}" for p in every)

    @property
    def multi(self) -> bool:
        return self.count > 1

    def name(self, index: int) -> str:
        return f"broker-{index}" if self.multi else "broker"

    def proxy_name(self, index: int) -> str:
        return f"proxy-{index}" if self.multi else "proxy"

    def ports(self, index: int = 0) -> BrokerPorts:
        if index < 0 or index >= self.count:
            raise HarnessError(f"broker index {index} out of range (0..{self.count - 1})")
        if not self.multi:
            b = self.port_base
            return BrokerPorts(b + OFF_BROKER, b + OFF_CONTROLLER, b + OFF_SASL_SSL,
                               b + OFF_PROXIED, b + OFF_PROXY, b + OFF_PROXY_CONTROL)
        b = self.port_base + OFF_MULTI_BROKERS + MULTI_BROKER_STRIDE * index
        return BrokerPorts(b, b + 1, b + 2, b + 3, b + 4, b + 5)

    def indices(self, index: Optional[int]) -> List[int]:
        """[index] (range-checked), or every index with None."""
        if index is None:
            return list(range(self.count))
        self.ports(index)  # range check
        return [index]

    @property
    def replication(self) -> int:
        return min(3, self.count)

    @property
    def min_isr(self) -> int:
        return 2 if self.count >= 3 else 1


class KafkaBrokers:
    """The broker(s) of the cluster: a service object that owns their data dirs, their config
    files, the meta file of the state dir (``broker-meta.json``) and whether they run with
    SASL_SSL. Its collaborators: `layout` (ports and names), `procs` (``Processes``), `tools`
    (``KafkaTools``: java command lines, the storage tool), `tls` (``TlsMaterial``), `proxies`
    (``Proxies``, started and stopped with each broker) and `on_started` (the cluster rewrites
    its env file).

    Several brokers run in KRaft combined mode, node ids 1..n, every node a voter, each with its
    own data dir and log; replication factor 3 and min.insync.replicas 2 for topics and every
    internal topic.
    """

    def __init__(self, layout: BrokerLayout, state_dir: Path, logs_dir: Path, procs: Processes,
                 tools: KafkaTools, tls: TlsMaterial, proxies: Proxies,
                 on_started: Callable[[], None]):
        self.layout = layout
        self.state_dir = state_dir
        self.logs_dir = logs_dir
        self._procs = procs
        self._tools = tools
        self._tls = tls
        self._proxies = proxies
        self._on_started = on_started
        self.sasl_ssl = bool(self.meta().get("sasl_ssl", False))

    def running(self, index: Optional[int] = None) -> bool:
        """Broker `index` runs; with None, any broker."""
        return any(self._procs.is_running(self.layout.name(i)) for i in self.layout.indices(index))

    def meta(self) -> dict:
        return load_broker_meta(self.state_dir)

    def data_dir(self, index: int) -> Path:
        return self.state_dir / ("kafka-data" if not self.layout.multi else f"kafka-data-{index}")

    def properties(self, sasl_ssl: bool, index: int = 0,
                   authorizer: bool = False) -> Dict[str, Any]:
        """server.properties of broker `index`."""
        layout = self.layout
        ports = layout.ports(index)
        listeners = [f"PLAINTEXT://127.0.0.1:{ports.plaintext}",
                     f"CONTROLLER://127.0.0.1:{ports.controller}"]
        advertised = [f"PLAINTEXT://127.0.0.1:{ports.plaintext}"]
        protocol_map = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
        # PROXIED: plaintext, reached through the blackhole proxy (clients follow the advertised
        # address after bootstrap, so it must be the proxy's).
        listeners.append(f"PROXIED://127.0.0.1:{ports.proxied}")
        advertised.append(f"PROXIED://127.0.0.1:{ports.proxy}")
        protocol_map += ",PROXIED:PLAINTEXT"
        if sasl_ssl:
            listeners.append(f"SASL_SSL://127.0.0.1:{ports.sasl_ssl}")
            advertised.append(f"SASL_SSL://127.0.0.1:{ports.sasl_ssl}")
            protocol_map += ",SASL_SSL:SASL_SSL"
        voters = ",".join(f"{i + 1}@127.0.0.1:{layout.ports(i).controller}"
                          for i in range(layout.count))
        rf, isr = layout.replication, layout.min_isr
        props: Dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": index + 1,
            "controller.quorum.voters": voters,
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": protocol_map,
            "log.dirs": self.data_dir(index),
            # as Kafka's config/server.properties
            "num.network.threads": 3,
            "num.io.threads": 4 if not layout.multi else 2,
            "socket.send.buffer.bytes": 102400,
            "socket.receive.buffer.bytes": 102400,
            "socket.request.max.bytes": 104857600,
            "num.partitions": 1,
            "num.recovery.threads.per.data.dir": 1,
            "log.retention.hours": 168,
            "log.segment.bytes": 1073741824,
            "log.retention.check.interval.ms": 300000,
            # replication of topics and internal topics (1 on a single broker)
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": isr,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": isr,
            "group.initial.rebalance.delay.ms": 0,
            "default.replication.factor": rf,
            "min.insync.replicas": isr,
        }
        if layout.multi:
            # Leaders return to their preferred broker soon after it comes back.
            props["leader.imbalance.check.interval.seconds"] = 30
        if authorizer:
            # ACLs for the tests that need them (start_broker(authorizer=True)): a resource
            # without ACLs stays open to everyone, so the other tests see no difference; the
            # PLAINTEXT principal (ANONYMOUS: inter-broker, controller, the harness's tools and
            # the workers' own clients) and the harness's SCRAM user are super users.
            props.update({
                "authorizer.class.name": AUTHORIZER,
                "allow.everyone.if.no.acl.found": "true",
                "super.users": f"User:ANONYMOUS;User:{SCRAM_USER}",
            })
        # Broker settings of an experiment (the bench's --broker-config): "k=v,k=v".
        props.update(extra_broker_properties())
        if sasl_ssl:
            jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            props.update({
                "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
                "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": jaas,
                "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
                "listener.name.sasl_ssl.ssl.keystore.location": self._tls.broker_keystore,
                "listener.name.sasl_ssl.ssl.keystore.password": TLS_PASSWORD,
                "listener.name.sasl_ssl.ssl.key.password": TLS_PASSWORD,
            })
        return props

    def start(self, sasl_ssl: Optional[bool] = None, fresh: bool = False,
              timeout: float = BOUND_S, index: Optional[int] = None,
              authorizer: Optional[bool] = None) -> str:
        """Start the KRaft node(s) (formatting their storage on first start): broker `index`, or
        every broker with None (several start together: none finishes starting without a
        controller quorum).

        Each start is waited for while the broker writes its log or uses CPU, up to `timeout`
        wall seconds (harness/waits.py); a broker that exits or stays silent fails at once.
        Data in the state dir is kept across stop/start; `fresh=True` wipes it first. sasl_ssl
        None keeps what the cluster was started with; so does authorizer (True: Kafka's
        StandardAuthorizer, resources without ACLs open to everyone, see properties()).
        Returns the PLAINTEXT bootstrap."""
        if sasl_ssl is None:
            sasl_ssl = bool(self.sasl_ssl)
        if authorizer is None:
            authorizer = self.authorizer
        layout, procs = self.layout, self._procs
        indices = [i for i in layout.indices(index) if not procs.is_running(layout.name(i))]
        if self.running() and bool(sasl_ssl) != bool(self.sasl_ssl):
            raise HarnessError("broker already running with sasl_ssl="
                               f"{self.sasl_ssl}; stop it first")
        if not indices:
            return layout.bootstrap
        _ = self._tools.kafka_lib
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for i in indices:
            p = layout.ports(i)
            for port, what in ((p.plaintext, "broker"), (p.controller, "controller"),
                               (p.proxied, "PROXIED listener"), (p.proxy, "proxy"),
                               (p.proxy_control, "proxy control")) + (
                    ((p.sasl_ssl, "SASL_SSL listener"),) if sasl_ssl else ()):
                procs.check_port_free(port, f"{layout.name(i)} {what}")
        meta = self.meta()
        formatted = all((self.data_dir(i) / "meta.properties").exists()
                        for i in range(layout.count)) and meta.get("cluster_id") and \
            meta.get("port_base") == layout.port_base and meta.get("brokers", 1) == layout.count
        if fresh or not formatted:
            if self.running():
                raise HarnessError("cannot format while other brokers run; stop them first")
            for i in range(layout.count):
                shutil.rmtree(self.data_dir(i), ignore_errors=True)
            meta = {}
            indices = list(range(layout.count))
        if sasl_ssl:
            self._tls.ensure()
        cfg_dir = self.state_dir / "config"
        log4j2 = cfg_dir / "broker-log4j2.xml"
        _write_atomic(log4j2, BROKER_LOG4J2)
        props_files = {}
        for i in range(layout.count):
            name = "server.properties" if not layout.multi else f"server-{i}.properties"
            props_files[i] = cfg_dir / name
            _write_atomic(props_files[i], _props(self.properties(sasl_ssl, i, authorizer=authorizer)))
        if not meta:
            cluster_id = self._new_cluster_id()
            for i in range(layout.count):
                args = ["format", "-t", cluster_id, "-c", props_files[i],
                        "--feature", f"share.version={SHARE_VERSION}"]
                for mech in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
                    args += ["--add-scram", f"{mech}=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"]
                proc = self._tools.run_tool(STORAGE_TOOL, *args, check=False, timeout=120)
                (self.logs_dir).mkdir(parents=True, exist_ok=True)
                with open(self.logs_dir / "broker-format.log", "a") as f:
                    f.write(proc.stdout + proc.stderr)
                if proc.returncode != 0:
                    raise HarnessError(f"kafka-storage format failed ({proc.returncode}); see "
                                       f"{self.logs_dir / 'broker-format.log'}:\n{proc.stdout}{proc.stderr}")
            meta = {"cluster_id": cluster_id, "port_base": layout.port_base, "scram": True,
                    "brokers": layout.count}
        meta["sasl_ssl"] = bool(sasl_ssl)
        meta["authorizer"] = bool(authorizer)
        _write_atomic(broker_meta_path(self.state_dir), json.dumps(meta, indent=1))
        self.sasl_ssl = bool(sasl_ssl)
        heap = os.environ.get("SHARESINK_BROKER_HEAP", "1g" if not layout.multi else "768m")
        waits = []
        for i in indices:
            name = layout.name(i)
            log = self.logs_dir / f"{name}.log"
            start_offset = log.stat().st_size if log.exists() else 0
            archive_opts, archive_at_exit = self._tools.class_archive_opts("broker")
            cmd = self._tools.java_cmd(BROKER_MAIN, [props_files[i]], heap=heap, log4j2=log4j2, jvm_opts=[
                f"-Xms{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                f"-Dkafka.logs.dir={self.logs_dir}", f"-Dsharesink.cluster={name}"] + archive_opts
                + os.environ.get("SHARESINK_BROKER_JVM_OPTS", "").split())
            procs.spawn(name, cmd, log, class_archive=archive_at_exit)
            waits.append((i, name, log, start_offset))
        for i, name, log, start_offset in waits:
            port = layout.ports(i).plaintext

            def started(log=log, start_offset=start_offset, port=port):
                with open(log, "rb") as f:
                    f.seek(start_offset)
                    text = f.read().decode("utf-8", "replace")
                return "Kafka Server started" in text and _port_open(port)

            procs.wait(f"{name} start", started, timeout, log, name=name)
            self._proxies.start(i)
        self._on_started()
        return layout.bootstrap

    @staticmethod
    def _new_cluster_id() -> str:
        while True:
            cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            if not cid.startswith("-"):
                return cid

    def stop(self, timeout: float = 60, index: Optional[int] = None) -> None:
        """Stop broker `index` (SIGTERM: a controlled shutdown), or every broker with None."""
        indices = self.layout.indices(index)
        self._procs.stop_together([self.layout.name(i) for i in indices], timeout=timeout)
        for i in indices:
            self._proxies.stop(i)

    def kill(self, index: Optional[int] = None) -> None:
        """kill -9 of broker `index`, or of every broker with None."""
        for i in self.layout.indices(index):
            self._procs.stop(self.layout.name(i), kill=True)
            self._proxies.stop(i)

    def restart(self, index: Optional[int] = None, timeout: float = BOUND_S,
                authorizer: Optional[bool] = None) -> str:
        """Stop and start broker `index` (every broker with None) with the same settings, or
        with the authorizer switched on or off (its data kept)."""
        self.stop(index=index)
        return self.start(timeout=timeout, index=index, authorizer=authorizer)

    @property
    def authorizer(self) -> bool:
        """Whether the broker(s) run with the StandardAuthorizer."""
        return bool(self.meta().get("authorizer", False))
