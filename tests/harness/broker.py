"""The KRaft broker(s): one node (the default) or several in combined mode, their ports,
properties, storage format, start and stop."""

from __future__ import annotations

import base64
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

from harness.artifacts import KAFKA_VERSION, _version
from harness.common import HarnessError, _log4j2, _port_open, _props, _write_atomic
from harness.tls import SCRAM_PASSWORD, SCRAM_USER, TLS_PASSWORD
from harness.tools import STORAGE_TOOL
from harness.waits import BOUND_S

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


class Brokers:
    """The broker(s) of the cluster (a part of ``Cluster``: uses its ``state_dir``, ``logs_dir``,
    ``port_base``, ``brokers``, its processes, tools, TLS material and proxies).

    One broker (the default): process "broker", offsets OFF_BROKER.. (DEVELOPING.md). Several
    (`brokers=3`, `up --brokers 3`): KRaft nodes in combined mode "broker-0".."broker-<n-1>",
    node ids 1..n, every node a voter, each with its own block of ports (broker_ports()), its
    own data dir, log and blackhole proxy; replication factor 3 and min.insync.replicas 2 for
    topics and every internal topic.
    """

    @property
    def multi(self) -> bool:
        return self.brokers > 1

    def broker_name(self, index: int) -> str:
        return f"broker-{index}" if self.multi else "broker"

    def proxy_name(self, index: int) -> str:
        return f"proxy-{index}" if self.multi else "proxy"

    def broker_ports(self, index: int = 0) -> BrokerPorts:
        if index < 0 or index >= self.brokers:
            raise HarnessError(f"broker index {index} out of range (0..{self.brokers - 1})")
        if not self.multi:
            b = self.port_base
            return BrokerPorts(b + OFF_BROKER, b + OFF_CONTROLLER, b + OFF_SASL_SSL,
                               b + OFF_PROXIED, b + OFF_PROXY, b + OFF_PROXY_CONTROL)
        b = self.port_base + OFF_MULTI_BROKERS + MULTI_BROKER_STRIDE * index
        return BrokerPorts(b, b + 1, b + 2, b + 3, b + 4, b + 5)

    def _indices(self, index: Optional[int]) -> List[int]:
        if index is None:
            return list(range(self.brokers))
        self.broker_ports(index)  # range check
        return [index]

    @property
    def replication(self) -> int:
        return min(3, self.brokers)

    @property
    def min_isr(self) -> int:
        return 2 if self.brokers >= 3 else 1

    def broker_running(self, index: Optional[int] = None) -> bool:
        """Broker `index` runs; with None, any broker."""
        return any(self.is_running(self.broker_name(i)) for i in self._indices(index))

    def _broker_meta_path(self) -> Path:
        return self.state_dir / "broker-meta.json"

    def _load_broker_meta(self) -> dict:
        try:
            return json.loads(self._broker_meta_path().read_text())
        except (OSError, ValueError):
            return {}

    def _data_dir(self, index: int) -> Path:
        return self.state_dir / ("kafka-data" if not self.multi else f"kafka-data-{index}")

    def _broker_properties(self, sasl_ssl: bool, index: int = 0,
                           authorizer: bool = False) -> Dict[str, Any]:
        ports = self.broker_ports(index)
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
        voters = ",".join(f"{i + 1}@127.0.0.1:{self.broker_ports(i).controller}"
                          for i in range(self.brokers))
        rf, isr = self.replication, self.min_isr
        props: Dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": index + 1,
            "controller.quorum.voters": voters,
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": protocol_map,
            "log.dirs": self._data_dir(index),
            # as Kafka's config/server.properties
            "num.network.threads": 3,
            "num.io.threads": 4 if not self.multi else 2,
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
        if self.multi:
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
                "listener.name.sasl_ssl.ssl.keystore.location": self.tls_dir / "broker.p12",
                "listener.name.sasl_ssl.ssl.keystore.password": TLS_PASSWORD,
                "listener.name.sasl_ssl.ssl.key.password": TLS_PASSWORD,
            })
        return props

    def start_broker(self, sasl_ssl: Optional[bool] = None, fresh: bool = False,
                     timeout: float = BOUND_S, index: Optional[int] = None,
                     authorizer: Optional[bool] = None) -> str:
        """Start the KRaft node(s) (formatting their storage on first start): broker `index`, or
        every broker with None (several start together: none finishes starting without a
        controller quorum).

        Each start is waited for while the broker writes its log or uses CPU, up to `timeout`
        wall seconds (harness/waits.py); a broker that exits or stays silent fails at once.
        Data in the state dir is kept across stop/start; `fresh=True` wipes it first. sasl_ssl
        None keeps what the cluster was started with; so does authorizer (True: Kafka's
        StandardAuthorizer, resources without ACLs open to everyone, see _broker_properties).
        Returns the PLAINTEXT bootstrap."""
        if sasl_ssl is None:
            sasl_ssl = bool(self.sasl_ssl)
        if authorizer is None:
            authorizer = bool(self._load_broker_meta().get("authorizer", False))
        indices = [i for i in self._indices(index) if not self.is_running(self.broker_name(i))]
        if self.broker_running() and bool(sasl_ssl) != bool(self.sasl_ssl):
            raise HarnessError("broker already running with sasl_ssl="
                               f"{self.sasl_ssl}; stop it first")
        if not indices:
            return self.bootstrap
        _ = self.kafka_lib
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for i in indices:
            p = self.broker_ports(i)
            for port, what in ((p.plaintext, "broker"), (p.controller, "controller"),
                               (p.proxied, "PROXIED listener"), (p.proxy, "proxy"),
                               (p.proxy_control, "proxy control")) + (
                    ((p.sasl_ssl, "SASL_SSL listener"),) if sasl_ssl else ()):
                self._check_port_free(port, f"{self.broker_name(i)} {what}")
        meta = self._load_broker_meta()
        formatted = all((self._data_dir(i) / "meta.properties").exists()
                        for i in range(self.brokers)) and meta.get("cluster_id") and \
            meta.get("port_base") == self.port_base and meta.get("brokers", 1) == self.brokers
        if fresh or not formatted:
            if self.broker_running():
                raise HarnessError("cannot format while other brokers run; stop them first")
            for i in range(self.brokers):
                shutil.rmtree(self._data_dir(i), ignore_errors=True)
            meta = {}
            indices = list(range(self.brokers))
        if sasl_ssl:
            self._ensure_tls()
        cfg_dir = self.state_dir / "config"
        log4j2 = cfg_dir / "broker-log4j2.xml"
        _write_atomic(log4j2, BROKER_LOG4J2)
        props_files = {}
        for i in range(self.brokers):
            name = "server.properties" if not self.multi else f"server-{i}.properties"
            props_files[i] = cfg_dir / name
            _write_atomic(props_files[i],
                          _props(self._broker_properties(sasl_ssl, i, authorizer=authorizer)))
        if not meta:
            cluster_id = self._new_cluster_id()
            for i in range(self.brokers):
                args = ["format", "-t", cluster_id, "-c", props_files[i],
                        "--feature", f"share.version={SHARE_VERSION}"]
                for mech in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
                    args += ["--add-scram", f"{mech}=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"]
                proc = self.run_tool(STORAGE_TOOL, *args, check=False, timeout=120)
                (self.logs_dir).mkdir(parents=True, exist_ok=True)
                with open(self.logs_dir / "broker-format.log", "a") as f:
                    f.write(proc.stdout + proc.stderr)
                if proc.returncode != 0:
                    raise HarnessError(f"kafka-storage format failed ({proc.returncode}); see "
                                       f"{self.logs_dir / 'broker-format.log'}:\n{proc.stdout}{proc.stderr}")
            meta = {"cluster_id": cluster_id, "port_base": self.port_base, "scram": True,
                    "brokers": self.brokers}
        meta["sasl_ssl"] = bool(sasl_ssl)
        meta["authorizer"] = bool(authorizer)
        _write_atomic(self._broker_meta_path(), json.dumps(meta, indent=1))
        self.sasl_ssl = bool(sasl_ssl)
        heap = os.environ.get("SHARESINK_BROKER_HEAP", "1g" if not self.multi else "768m")
        waits = []
        for i in indices:
            name = self.broker_name(i)
            log = self.logs_dir / f"{name}.log"
            start_offset = log.stat().st_size if log.exists() else 0
            cmd = self.java_cmd(BROKER_MAIN, [props_files[i]], heap=heap, log4j2=log4j2, jvm_opts=[
                f"-Xms{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                f"-Dkafka.logs.dir={self.logs_dir}", f"-Dsharesink.cluster={name}"])
            self._spawn(name, cmd, log)
            waits.append((i, name, log, start_offset))
        for i, name, log, start_offset in waits:
            port = self.broker_ports(i).plaintext

            def started(log=log, start_offset=start_offset, port=port):
                with open(log, "rb") as f:
                    f.seek(start_offset)
                    text = f.read().decode("utf-8", "replace")
                return "Kafka Server started" in text and _port_open(port)

            self._wait(f"{name} start", started, timeout, log, name=name)
            self.start_proxy(i)
        self._write_env()
        return self.bootstrap

    @staticmethod
    def _new_cluster_id() -> str:
        while True:
            cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            if not cid.startswith("-"):
                return cid

    def stop_broker(self, timeout: float = 60, index: Optional[int] = None) -> None:
        """Stop broker `index` (SIGTERM: a controlled shutdown), or every broker with None."""
        indices = self._indices(index)
        self._stop_together([self.broker_name(i) for i in indices], timeout=timeout)
        for i in indices:
            self.stop_proxy(i)

    def kill_broker(self, index: Optional[int] = None) -> None:
        """kill -9 of broker `index`, or of every broker with None."""
        for i in self._indices(index):
            self._stop(self.broker_name(i), kill=True)
            self.stop_proxy(i)

    def restart_broker(self, index: Optional[int] = None, timeout: float = BOUND_S,
                       authorizer: Optional[bool] = None) -> str:
        """Stop and start broker `index` (every broker with None) with the same settings, or
        with the authorizer switched on or off (its data kept)."""
        self.stop_broker(index=index)
        return self.start_broker(timeout=timeout, index=index, authorizer=authorizer)

    @property
    def authorizer(self) -> bool:
        """Whether the broker(s) run with the StandardAuthorizer."""
        return bool(self._load_broker_meta().get("authorizer", False))
