#!/usr/bin/env python3
"""Local test cluster for sharesink: a real Apache Kafka 4.4.0 KRaft broker, Connect workers
(distributed mode) and PostgreSQL, all on 127.0.0.1, started from Maven-resolved jars.

Python standard library only. Library use (``tests/`` on ``sys.path``, as pyproject.toml's
``pythonpath`` puts it for pytest)::

    from harness.cluster import Cluster
    c = Cluster()
    c.start_broker()
    url = c.start_worker(0)
    ...
    c.down()

Command line::

    python3 tests/harness/cluster.py up [--workers N] [--postgres] [--sasl-ssl] [--plugin-archive P]
    python3 tests/harness/cluster.py down | status | env

State and logs live in ``build/cluster/`` (``SHARESINK_CLUSTER_DIR``); ports derive from
``SHARESINK_PORT_BASE`` (default 29000, below the ephemeral port range so no client socket can
take a listener port); downloads are cached in ``~/.cache/sharesink/`` (``SHARESINK_CACHE``).
Every process started is recorded with its PID under ``<state>/pids/`` and ``down()`` stops
exactly those.

``Cluster`` is the façade over one module per service, as in Kafka's system tests
(tests/kafkatest/services), each service an object that owns its state and is given its
collaborators when it is built, never reading another's through ``self``: ``procs``
(``procs.Processes``: pid files, spawn, stop, waits), ``tools`` (``tools.KafkaTools``: the Kafka
jars, java command lines, Kafka's command-line tools), ``tls`` (``tls.TlsMaterial``: SASL_SSL
material), ``proxies`` (``proxy_control.Proxies``: the brokers' blackhole proxies, ``proxy.py``),
``kafka`` (``broker.KafkaBrokers``: the KRaft nodes, with ``layout``, ``broker.BrokerLayout``,
their ports and names), ``workers`` (``connect.ConnectWorkers``, with ``Rest`` their REST client),
``backends`` (``backends.MatrixBackends``: the sink matrix's servers) and ``pg``
(``postgres.PostgresServer``); ``artifacts`` resolves jars and plugins, ``common`` has the shared
helpers. The cluster builds them in that order, each from those before it (the tools learn whether
a broker runs through a callable), keeps the state dir, the env file (the services' ``on_started``
callback), ``up``/``down``/``status`` and the command line, and offers the names tests, the bench
and the demo call, each one service's own method or attribute; the names tests import from
``harness.cluster`` are re-exported here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

if __package__ in (None, ""):  # run as a script: sys.path[0] is tests/harness/, not tests/
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import costs
from harness.artifacts import (
    BASIC_AUTH_REST_EXTENSION, BASIC_AUTH_VERSIONS, CONNECT_FILE_VERSIONS, DEBEZIUM_JDBC_VERSIONS,
    ICEBERG_JARS, ICEBERG_VERSIONS, JMX_EXPORTER, KAFKA_DEPS_POM, KAFKA_VERSION, TEST_SINKS,
    TEST_SINKS_DIR, THIRD_PARTY_PLUGINS, cache_dir, default_plugin_archive,
    ensure_basic_auth_extension, ensure_jmx_exporter, ensure_kafka_lib, ensure_plugin,
    ensure_test_sink, plugin_version)
from harness.backends import MatrixBackends
from harness.broker import (
    BROKER_LOG4J2, BROKER_MAIN, MAX_BROKERS, MULTI_BROKER_STRIDE, OFF_BROKER, OFF_CONTROLLER,
    OFF_MULTI_BROKERS, OFF_PROXIED, OFF_PROXY, OFF_PROXY_CONTROL, OFF_SASL_SSL, SHARE_VERSION,
    BrokerLayout, BrokerPorts, KafkaBrokers, broker_meta_path, load_broker_meta)
from harness.common import HARNESS_DIR, REPO_ROOT, HarnessError, _java, _write_atomic
from harness.connect import (
    CONNECT_DISTRIBUTED, OFF_WORKERS, SHARE_MODE_REST_EXTENSION, WORKER_LOG4J2, Rest, RestError,
    ConnectWorkers)
from harness.postgres import OFF_POSTGRES, PG_DB, PG_PASSWORD, PG_USER, PostgresServer
from harness.procs import Processes
from harness.proxy_control import PROXY_SCRIPT, Proxies
from harness.tls import SCRAM_PASSWORD, SCRAM_USER, TLS_PASSWORD, TlsMaterial
from harness.tools import (
    CONFIG_COMMAND, CONSOLE_CONSUMER, CONSOLE_PRODUCER, FEATURE_COMMAND, LEADER_ELECTION_COMMAND,
    PRODUCER_PERF, REASSIGN_COMMAND, SEND_ERROR, SHARE_CONSUMER_PERF, SHARE_GROUP_COMMAND,
    STORAGE_TOOL, TOOLS_LOG4J2, TOPIC_COMMAND, KafkaTools)

# What harness.cluster offered before the services moved to modules of their own, re-exported.
__all__ = [
    "Cluster", "main",
    # artifacts
    "BASIC_AUTH_REST_EXTENSION", "BASIC_AUTH_VERSIONS", "CONNECT_FILE_VERSIONS",
    "DEBEZIUM_JDBC_VERSIONS", "ICEBERG_JARS", "ICEBERG_VERSIONS", "JMX_EXPORTER", "KAFKA_DEPS_POM",
    "KAFKA_VERSION", "TEST_SINKS", "TEST_SINKS_DIR", "THIRD_PARTY_PLUGINS", "cache_dir",
    "default_plugin_archive", "ensure_basic_auth_extension", "ensure_jmx_exporter",
    "ensure_kafka_lib", "ensure_plugin", "ensure_test_sink", "plugin_version",
    # broker
    "BROKER_LOG4J2", "BROKER_MAIN", "MAX_BROKERS", "MULTI_BROKER_STRIDE", "OFF_BROKER",
    "OFF_CONTROLLER", "OFF_MULTI_BROKERS", "OFF_PROXIED", "OFF_PROXY", "OFF_PROXY_CONTROL",
    "OFF_SASL_SSL", "SHARE_VERSION", "BrokerPorts",
    # common
    "HARNESS_DIR", "REPO_ROOT", "HarnessError", "_java",
    # connect
    "CONNECT_DISTRIBUTED", "OFF_WORKERS", "SHARE_MODE_REST_EXTENSION", "WORKER_LOG4J2", "Rest",
    "RestError",
    # postgres
    "OFF_POSTGRES", "PG_DB", "PG_PASSWORD", "PG_USER",
    # proxy control
    "PROXY_SCRIPT",
    # tls
    "SCRAM_PASSWORD", "SCRAM_USER", "TLS_PASSWORD",
    # tools
    "CONFIG_COMMAND", "CONSOLE_CONSUMER", "CONSOLE_PRODUCER", "FEATURE_COMMAND",
    "LEADER_ELECTION_COMMAND", "PRODUCER_PERF", "REASSIGN_COMMAND", "SEND_ERROR",
    "SHARE_CONSUMER_PERF", "SHARE_GROUP_COMMAND", "STORAGE_TOOL", "TOOLS_LOG4J2", "TOPIC_COMMAND",
]


# --------------------------------------------------------------------------------------------
# the cluster


class Cluster:
    """A local cluster in one state dir: the façade over its services (module docstring), each
    an object that owns its state and is given its collaborators when it is built. The names
    below the services are what the tests, the bench and the demo call, each one service's own
    method or attribute."""

    def __init__(self, state_dir: Union[str, Path, None] = None, port_base: Optional[int] = None,
                 brokers: Optional[int] = None):
        """`brokers`: how many KRaft nodes; default what the state dir's cluster was formatted
        with, else SHARESINK_BROKERS, else 1."""
        self.state_dir = Path(state_dir or os.environ.get("SHARESINK_CLUSTER_DIR")
                              or REPO_ROOT / "build" / "cluster").resolve()
        self.port_base = int(port_base if port_base is not None
                             else os.environ.get("SHARESINK_PORT_BASE", "29000"))
        recorded = load_broker_meta(self.state_dir).get("brokers")
        self.brokers = int(brokers or recorded or os.environ.get("SHARESINK_BROKERS") or 1)
        self.logs_dir = self.state_dir / "logs"
        self.pids_dir = self.state_dir / "pids"
        self.tls_dir = self.state_dir / "tls"
        layout = self.layout = BrokerLayout(self.port_base, self.brokers)

        # The services, each built from those before it. The tools learn whether a broker runs
        # through a callable, as the brokers are built from the tools.
        self.procs = Processes(self.state_dir, self.logs_dir, self.pids_dir)
        self.tools = KafkaTools(self.state_dir, layout.bootstrap, layout.replication,
                                brokers_running=lambda: self.kafka.running())
        self.tls = TlsMaterial(self.tls_dir, layout.sasl_ssl_bootstrap, self.tools)
        self.proxies = Proxies(layout, self.logs_dir, self.procs)
        self.kafka = KafkaBrokers(layout, self.state_dir, self.logs_dir, self.procs, self.tools,
                                  self.tls, self.proxies, self._write_env)
        self.workers = ConnectWorkers(self.state_dir, self.logs_dir, self.port_base,
                                      layout.bootstrap, layout.replication, self.procs, self.tools,
                                      self.kafka.running, self._write_env)
        self.backends = MatrixBackends(self.state_dir, self.logs_dir, self.port_base, self.procs)
        self.postgres_port = self.port_base + OFF_POSTGRES
        self.pg = PostgresServer(self.state_dir, self.logs_dir, self.postgres_port, self.procs,
                                 self._write_env)

        # ---- addresses
        first = layout.ports(0)
        self.broker_port = first.plaintext
        self.controller_port = first.controller
        self.sasl_ssl_port = first.sasl_ssl
        self.proxied_port = first.proxied
        self.proxy_port = first.proxy
        self.proxy_control_port = first.proxy_control
        self.bootstrap = layout.bootstrap
        # Through the blackhole proxies (proxy_blackhole() etc.); brokers advertise their proxy.
        self.proxied_bootstrap = layout.proxied_bootstrap
        self.sasl_ssl_bootstrap = layout.sasl_ssl_bootstrap
        self.replication = layout.replication
        self.broker_name = layout.name
        self.broker_ports = layout.ports

        # ---- processes (self.procs)
        self.is_running = self.procs.is_running
        self.current_log = self.procs.current_log

        # ---- the broker(s) (self.kafka) and their blackhole proxies (self.proxies)
        self.start_broker = costs.timed(costs.CLUSTER, self.kafka.start)
        self.stop_broker = costs.timed(costs.CLUSTER, self.kafka.stop)
        self.kill_broker = costs.timed(costs.CLUSTER, self.kafka.kill)
        self.restart_broker = costs.timed(costs.CLUSTER, self.kafka.restart)
        self.proxy_status = self.proxies.status
        self.proxy_forward = self.proxies.forward
        self.proxy_blackhole = self.proxies.blackhole
        self.proxy_resume = self.proxies.resume
        self.proxy_dead = self.proxies.dead

        # ---- SASL_SSL material (self.tls)
        self.ca_pem = self.tls.ca_pem
        self.truststore = self.truststore_p12 = self.tls.truststore_p12
        self.truststore_jks = self.tls.truststore_jks
        self.scram_user = SCRAM_USER
        self.scram_password = SCRAM_PASSWORD
        self.sasl_ssl_client_config = self.tls.sasl_ssl_client_config
        self.sasl_ssl_client_properties_file = self.tls.sasl_ssl_client_properties_file
        self.ensure_scram_user = self.tls.ensure_scram_user

        # ---- Kafka's tools (self.tools)
        self.java_cmd = self.tools.java_cmd
        self.run_tool = costs.timed(costs.TOOLS, self.tools.run_tool)
        self.create_topic = costs.timed(costs.TOOLS, self.tools.create_topic)
        self.delete_topic = costs.timed(costs.TOOLS, self.tools.delete_topic)
        self.list_topics = costs.timed(costs.TOOLS, self.tools.list_topics)
        self.produce = costs.timed(costs.TOOLS, self.tools.produce)
        self.consume = costs.timed(costs.TOOLS, self.tools.consume)
        self.share_consume = costs.timed(costs.TOOLS, self.tools.share_consume)
        self.end_offsets = costs.timed(costs.TOOLS, self.tools.end_offsets)
        self.features = costs.timed(costs.TOOLS, self.tools.features)
        self.set_group_config = costs.timed(costs.TOOLS, self.tools.set_group_config)
        self.describe_configs = costs.timed(costs.TOOLS, self.tools.describe_configs)
        self.set_broker_config = costs.timed(costs.TOOLS, self.tools.set_broker_config)
        self.allow_group_prefix = costs.timed(costs.TOOLS, self.tools.allow_group_prefix)
        self.allow_topic_prefix = costs.timed(costs.TOOLS, self.tools.allow_topic_prefix)
        self.describe_topic = costs.timed(costs.TOOLS, self.tools.describe_topic)
        self.leaders = costs.timed(costs.TOOLS, self.tools.leaders)
        self.broker_index = self.tools.broker_index
        self.elect_leaders = costs.timed(costs.TOOLS, self.tools.elect_leaders)
        self.reassign_partitions = costs.timed(costs.TOOLS, self.tools.reassign_partitions)
        self.wait_in_sync = costs.timed(costs.TOOLS, self.tools.wait_in_sync)

        # ---- Connect workers (self.workers)
        self.start_worker = costs.timed(costs.WORKERS, self.workers.start)
        self.stop_worker = costs.timed(costs.WORKERS, self.workers.stop)
        self.kill_worker = costs.timed(costs.WORKERS, self.workers.kill)
        self.rest = self.workers.rest
        self.worker_url = self.workers.url
        self.worker_port = self.workers.port

        # ---- the sink matrix's backends (self.backends)
        self.mosquitto_port = self.backends.mosquitto_port
        self.mariadb_port = self.backends.mariadb_port
        self.nats_port = self.backends.nats_port
        self.http_target_port = self.backends.http_target_port
        self.start_mosquitto = costs.timed(costs.CLUSTER, self.backends.start_mosquitto)
        self.stop_mosquitto = costs.timed(costs.CLUSTER, self.backends.stop_mosquitto)
        self.start_mariadb = costs.timed(costs.CLUSTER, self.backends.start_mariadb)
        self.stop_mariadb = costs.timed(costs.CLUSTER, self.backends.stop_mariadb)
        self.mariadb_info = self.backends.mariadb_info
        self.mariadb_sql = self.backends.mariadb_sql
        self.start_nats = costs.timed(costs.CLUSTER, self.backends.start_nats)
        self.stop_nats = costs.timed(costs.CLUSTER, self.backends.stop_nats)
        self.restart_backend = self.backends.restart

        # ---- PostgreSQL (self.pg)
        self.start_postgres = costs.timed(costs.CLUSTER, self.pg.start)
        self.stop_postgres = costs.timed(costs.CLUSTER, self.pg.stop)
        self.postgres_info = self.pg.info
        self.psql = self.pg.psql
        self.pg_stop_for = self.pg.stop_for

    # ---- what changes while the cluster runs

    @property
    def sasl_ssl(self) -> bool:
        """Whether the broker(s) run (or last ran) with the SASL_SSL listener."""
        return self.kafka.sasl_ssl

    @property
    def kafka_lib(self) -> Path:
        return self.tools.kafka_lib

    @property
    def classpath(self) -> str:
        return self.tools.classpath

    # ---- env file, status, up/down

    def _write_env(self) -> None:
        env = {
            "SHARESINK_CLUSTER_DIR": str(self.state_dir),
            "SHARESINK_PORT_BASE": str(self.port_base),
            "BOOTSTRAP": self.bootstrap,
            "PROXIED_BOOTSTRAP": self.proxied_bootstrap,
            "PROXY_CONTROL_PORT": str(self.proxy_control_port),
            "PROXY_CONTROL_PORTS": ",".join(str(self.layout.ports(i).proxy_control)
                                            for i in range(self.brokers)),
            "BROKERS": str(self.brokers),
            "CONNECT_URL": self.worker_url(0),
            "CONNECT_URL_0": self.worker_url(0),
            "CONNECT_URL_1": self.worker_url(1),
            "KAFKA_LIB": str(self.kafka_lib),
            "KAFKA_CLASSPATH": self.classpath,
            "JAVA": _java(),
            "LOGS_DIR": str(self.logs_dir),
            "PLUGIN_PATH": str(self.workers.plugin_path_dir()),
        }
        if self.kafka.sasl_ssl:
            tls = self.tls
            env.update({
                "SASL_SSL_BOOTSTRAP": self.sasl_ssl_bootstrap,
                "SCRAM_USER": SCRAM_USER, "SCRAM_PASSWORD": SCRAM_PASSWORD,
                "CA_PEM": str(tls.ca_pem), "TRUSTSTORE_P12": str(tls.truststore_p12),
                "TRUSTSTORE_JKS": str(tls.truststore_jks), "TRUSTSTORE_PASSWORD": TLS_PASSWORD,
                "SASL_SSL_CLIENT_PROPERTIES": str(tls.sasl_ssl_client_properties),
            })
        pg = self.pg.info()
        env.update({"PG_HOST": pg["host"], "PG_PORT": str(pg["port"]), "PG_DB": PG_DB,
                    "PG_USER": PG_USER, "PG_PASSWORD": PG_PASSWORD, "PG_JDBC_URL": pg["jdbc_url"]})
        text = "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())
        _write_atomic(self.state_dir / "env", text)

    def components(self) -> List[str]:
        names = [n for i in range(self.brokers)
                 for n in (self.layout.name(i), self.layout.proxy_name(i))]
        names += [f"worker-{i}" for i in range(len(OFF_WORKERS))] + ["postgres"]
        extra = sorted(p.stem for p in self.pids_dir.glob("*.pid")) if self.pids_dir.exists() else []
        return names + [n for n in extra if n not in names]

    def status(self) -> Dict[str, Any]:
        res = {}
        for n in self.components():
            info = self.procs.recorded(n)
            if info or self.procs.started_here(n):
                res[n] = {"pid": (info or {}).get("pid"), "running": self.procs.is_running(n)}
        return res

    @costs.timed_method(costs.CLUSTER)
    def down(self) -> None:
        """Stop every process this state dir recorded (workers first, then broker, postgres)."""
        order = [f"worker-{i}" for i in range(len(OFF_WORKERS))]
        order += [n for i in range(self.brokers)
                  for n in (self.layout.name(i), self.layout.proxy_name(i))]
        order += ["postgres"]
        order += [n for n in self.components() if n not in order]
        errors = []
        brokers = [n for n in order if n == "broker" or n.startswith("broker-")]
        with contextlib.suppress(HarnessError):
            self.procs.stop_together([n for n in order if n.startswith("worker-")], timeout=60)
        with contextlib.suppress(HarnessError):
            self.procs.stop_together(brokers, timeout=30)
        for n in order:
            try:
                self.procs.stop(n, timeout=60)
            except HarnessError as e:
                errors.append(str(e))
        if errors:
            raise HarnessError("; ".join(errors))

    @costs.timed_method(costs.CLUSTER)
    def up(self, workers: int = 0, postgres: bool = False, sasl_ssl: bool = False,
           plugin_archive: Union[str, Path, None, bool] = None, keep_data: bool = False,
           discovery: str = "hybrid_warn") -> None:
        """Stop leftovers recorded in the state dir, then start a clean cluster."""
        self.down()
        if not keep_data:
            for d in ("pgdata", "plugins", "tls", "logs.prev"):
                shutil.rmtree(self.state_dir / d, ignore_errors=True)
            for d in self.state_dir.glob("kafka-data*"):
                shutil.rmtree(d, ignore_errors=True)
            if self.logs_dir.exists():  # keep the previous run's logs one generation
                os.replace(self.logs_dir, self.state_dir / "logs.prev")
            with contextlib.suppress(FileNotFoundError):
                broker_meta_path(self.state_dir).unlink()
        self.kafka.start(sasl_ssl=sasl_ssl)
        for i in range(workers):
            self.workers.start(i, plugin_archive=plugin_archive, discovery=discovery)
        if postgres:
            self.pg.start()
        self._write_env()


# --------------------------------------------------------------------------------------------
# command line


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="(re)start a clean local cluster")
    up.add_argument("--workers", type=int, default=0, choices=range(0, len(OFF_WORKERS) + 1))
    up.add_argument("--brokers", type=int, default=None, choices=range(1, MAX_BROKERS + 1),
                    help="KRaft nodes (default 1; 3: replication factor 3, min ISR 2)")
    up.add_argument("--postgres", action="store_true")
    up.add_argument("--sasl-ssl", action="store_true")
    up.add_argument("--plugin-archive", default=None,
                    help="sharesink plugin zip (default: newest java/target/sharesink-*-plugin.zip)")
    up.add_argument("--no-sharesink", action="store_true",
                    help="start workers without the sharesink plugin")
    up.add_argument("--discovery", default="hybrid_warn")
    up.add_argument("--keep-data", action="store_true")
    sub.add_parser("down", help="stop every process the harness recorded")
    sub.add_parser("status", help="show recorded processes")
    sub.add_parser("env", help="print the sourceable env file")
    sub.add_parser("resolve", help="only resolve the jars and plugins into the cache")
    a = ap.parse_args(argv)
    c = Cluster(brokers=getattr(a, "brokers", None) or (1 if a.cmd == "up" else None))
    try:
        if a.cmd == "up":
            archive: Union[str, bool, None] = False if a.no_sharesink else a.plugin_archive
            c.up(workers=a.workers, postgres=a.postgres, sasl_ssl=a.sasl_ssl,
                 plugin_archive=archive, keep_data=a.keep_data, discovery=a.discovery)
            print((c.state_dir / "env").read_text(), end="")
        elif a.cmd == "down":
            c.down()
        elif a.cmd == "status":
            st = c.status()
            print(f"state dir {c.state_dir}, port base {c.port_base}")
            for n, s in st.items():
                print(f"  {n:10s} pid {s['pid']}: {'running' if s['running'] else 'not running'}")
            if not st:
                print("  nothing recorded")
        elif a.cmd == "env":
            p = c.state_dir / "env"
            if not p.exists():
                print(f"no {p}: run `up` first", file=sys.stderr)
                return 1
            print(p.read_text(), end="")
        elif a.cmd == "resolve":
            print(ensure_kafka_lib())
            for n in THIRD_PARTY_PLUGINS:
                print(ensure_plugin(n), plugin_version(n))
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
