"""The harness's services are objects that own their state (issue 42): each is built here from
its collaborators on a temporary state dir, without a broker, and a check of the source keeps any
class of the harness from reading, through `self`, an attribute it does not define itself (how
the services' former mixins reached each other's state through ``Cluster``)."""

from __future__ import annotations

import ast
import importlib
import inspect
import random
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Set

import pytest

from harness.backends import OFF_MARIADB, MatrixBackends
from harness.broker import (MAX_BROKERS, OFF_BROKER, OFF_MULTI_BROKERS, OFF_PROXY_CONTROL,
                            BrokerLayout, KafkaBrokers)
from harness.cluster import Cluster
from harness.common import HARNESS_DIR, ClassArchiveAtExit, HarnessError, _port_open
from harness.connect import OFF_WORKERS, ConnectWorkers
from harness.postgres import OFF_POSTGRES, PostgresServer
from harness.procs import Processes
from harness.proxy_control import Proxies
from harness.tls import TENANT_USERS, TlsMaterial
from harness.tools import CONFIG_COMMAND, KafkaTools

BASE = 31000


# --------------------------------------------------------------------------------------------
# no class reads another's state through self


def _self_reads_and_defines(cls: ast.ClassDef):
    """(attributes `cls`'s methods read through `self` with their lines, names it defines: its
    methods, class attributes and every `self.x` it assigns)."""
    defined: Set[str] = set()
    reads: Dict[str, int] = {}
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args \
                or fn.args.args[0].arg != "self":
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "self":
                if isinstance(node.ctx, ast.Store):
                    defined.add(node.attr)
                else:
                    reads.setdefault(node.attr, node.lineno)
    return reads, defined


def foreign_self_reads(sources: Dict[str, str],
                       inherited: Callable[[str, str], Set[str]] = lambda f, c: set()) -> List[str]:
    """'module.py:line Class.attr' for each attribute a class of `sources` ({file name: source})
    reads through `self` and neither it nor a base class of `sources` defines, nor a base from
    elsewhere (`inherited(file name, class name)`)."""
    classes: Dict[str, ast.ClassDef] = {}
    where: Dict[str, str] = {}
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = node
                where[node.name] = name

    def defines(cls: ast.ClassDef) -> Set[str]:
        names = _self_reads_and_defines(cls)[1] | inherited(where[cls.name], cls.name)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                names |= defines(classes[base.id])
        return names

    found = []
    for cname, cls in classes.items():
        reads, _ = _self_reads_and_defines(cls)
        own = defines(cls)
        found += [f"{where[cname]}:{line} {cname}.{attr}" for attr, line in sorted(reads.items())
                  if attr not in own and not attr.startswith("__")]
    return found


def _harness_sources() -> Dict[str, str]:
    return {p.name: p.read_text() for p in sorted(HARNESS_DIR.glob("*.py"))}


def _inherited_from_outside(file: str, cname: str) -> Set[str]:
    """What class `cname` of harness module `file` inherits from bases outside the harness
    (threading.Thread, Exception, ...)."""
    cls = getattr(importlib.import_module(f"harness.{Path(file).stem}"), cname, None)
    if not isinstance(cls, type):
        return set()
    return {a for base in cls.__mro__[1:] if not base.__module__.startswith("harness.")
            for a in dir(base)}


def test_no_harness_class_reads_state_it_does_not_own():
    sources = _harness_sources()
    assert {"broker.py", "connect.py", "tools.py", "procs.py", "cluster.py"} <= set(sources)
    assert foreign_self_reads(sources, _inherited_from_outside) == []


def test_the_check_sees_a_mixin():
    mixin = "class Workers:\n    def start(self):\n        return self.bootstrap + self._spawn()\n"
    assert foreign_self_reads({"connect.py": mixin}) == [
        "connect.py:3 Workers._spawn", "connect.py:3 Workers.bootstrap"]
    owned = ("class Base:\n    def __init__(self):\n        self.bootstrap = 'b'\n"
             "class Workers(Base):\n    def start(self):\n        return self.bootstrap\n")
    assert foreign_self_reads({"connect.py": owned}) == []


def test_cluster_is_a_facade_not_a_mixin_of_its_services():
    assert Cluster.__bases__ == (object,)


# --------------------------------------------------------------------------------------------
# each service from its collaborators


class FakeTools:
    """What TlsMaterial and KafkaBrokers ask of KafkaTools, recorded."""

    bootstrap = "127.0.0.1:1"
    kafka_lib = Path("/nonexistent/lib")
    config_command = "org.apache.kafka.tools.ConfigCommand"

    def __init__(self):
        self.runs: List[tuple] = []

    def run_tool(self, main_class, *args, **kw):
        self.runs.append((main_class,) + args)


class FakeProxies:
    def __init__(self):
        self.stopped: List[int] = []

    def stop(self, index: int = 0) -> None:
        self.stopped.append(index)


def _free_port_base() -> int:
    """A port base whose proxy ports (+95..+97) nobody listens on."""
    for _ in range(50):
        base = random.randrange(20000, 28000)
        if not any(_port_open(base + off) for off in (95, 96, 97)):
            return base
    pytest.skip("no free port base found")


def test_processes_record_and_stop_what_they_start(tmp_path):
    procs = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
    procs.spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"],
                tmp_path / "logs" / "sleeper.log")
    try:
        assert procs.is_running("sleeper") and procs.started_here("sleeper")
        assert (tmp_path / "pids" / "sleeper.pid").is_file()
        # Another object on the same state dir sees the process through its pid file.
        other = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
        assert other.is_running("sleeper") and not other.started_here("sleeper")
        assert other.recorded("sleeper")["pid"] == procs.recorded("sleeper")["pid"]
        assert " start sleeper: " in procs.current_log("sleeper")
    finally:
        procs.stop("sleeper", timeout=10)
    assert not procs.is_running("sleeper")
    assert not (tmp_path / "pids" / "sleeper.pid").exists()


# Writes its "class archive" when SIGTERM ends it, as a JVM with -XX:ArchiveClassesAtExit does.
_WRITES_AT_EXIT = """
import signal, sys, time
def bye(*_):
    open(sys.argv[1], "w").write("archive")
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
if sys.argv[3] == "kill":
    open(sys.argv[1], "w").write("a part")
open(sys.argv[2], "w").write("ready")
time.sleep(60)
"""


def test_a_class_archive_written_at_exit_is_kept_only_after_a_clean_stop(tmp_path):
    procs = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
    archive = tmp_path / "cds" / "kafka-worker-x.jsa"
    archive.parent.mkdir()
    for how in ("stop", "kill"):
        at_exit = ClassArchiveAtExit(archive.parent / f".{archive.name}.{how}", archive)
        ready = tmp_path / f"{how}.ready"
        procs.spawn(how, [sys.executable, "-c", _WRITES_AT_EXIT, str(at_exit.writing), str(ready),
                          how], tmp_path / "logs" / f"{how}.log", class_archive=at_exit)
        # Another object on the state dir stops it: the archive travels in the pid file.
        other = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        other.stop(how, timeout=10, kill=how == "kill")
        assert not at_exit.writing.exists()
        if how == "stop":
            assert archive.read_text() == "archive"
            archive.unlink()
        else:
            assert not archive.exists(), "a killed JVM's part of an archive was kept"


def test_broker_layout_ports_names_bootstraps():
    one = BrokerLayout(BASE, 1)
    assert (one.name(0), one.proxy_name(0), one.multi) == ("broker", "proxy", False)
    assert one.ports(0).plaintext == BASE + OFF_BROKER
    assert one.ports(0).proxy_control == BASE + OFF_PROXY_CONTROL
    assert (one.bootstrap, one.replication, one.min_isr) == (f"127.0.0.1:{BASE + OFF_BROKER}", 1, 1)
    three = BrokerLayout(BASE, 3)
    assert [three.name(i) for i in range(3)] == ["broker-0", "broker-1", "broker-2"]
    assert three.ports(2).plaintext == BASE + OFF_MULTI_BROKERS + 20
    assert three.bootstrap.count(",") == 2 and (three.replication, three.min_isr) == (3, 2)
    assert three.indices(None) == [0, 1, 2] and three.indices(1) == [1]
    with pytest.raises(HarnessError):
        three.ports(3)
    with pytest.raises(HarnessError):
        BrokerLayout(BASE, MAX_BROKERS + 1)


def test_kafka_tools_own_the_kafka_jars_and_their_log4j2(tmp_path):
    resolved = []

    def resolve():
        resolved.append(1)
        return tmp_path / "lib"

    tools = KafkaTools(tmp_path, "127.0.0.1:9", 1, kafka_lib=resolve)
    cmd = tools.java_cmd("Main", ["a"])
    tools.java_cmd("Main")
    assert resolved == [1] and tools.classpath == str(tmp_path / "lib" / "*")
    assert cmd[-4:] == ["-cp", tools.classpath, "Main", "a"]
    assert f"-Dlog4j2.configurationFile={tmp_path / 'config' / 'tools-log4j2.xml'}" in cmd
    assert tools.log4j2_file().is_file()


def test_tls_material_in_its_dir_scram_users_through_the_tools(tmp_path):
    tools = FakeTools()
    tls = TlsMaterial(tmp_path / "tls", "127.0.0.1:94", tools)
    assert tls.ca_pem == tmp_path / "tls" / "ca.pem"
    assert tls.broker_keystore.parent == tls.truststore.parent == tmp_path / "tls"
    assert tls.sasl_ssl_client_config()["bootstrap.servers"] == "127.0.0.1:94"
    path = tls.sasl_ssl_client_properties_file("SCRAM-SHA-256", user="tenant-a")
    text = path.read_text()
    assert path.parent == tmp_path / "tls" and "SCRAM-SHA-256" in text
    assert TENANT_USERS["tenant-a"] in text and "bootstrap.servers" not in text
    tls.ensure_scram_user("tenant-b")
    assert tools.runs[0][:3] == (CONFIG_COMMAND, "--bootstrap-server", tools.bootstrap)


def test_proxies_start_switch_and_stop_through_the_processes(tmp_path):
    layout = BrokerLayout(_free_port_base(), 1)
    procs = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
    proxies = Proxies(layout, tmp_path / "logs", procs)
    assert proxies.start(0, timeout=60) == layout.proxied_bootstrap
    try:
        assert procs.is_running("proxy")
        assert proxies.blackhole()["mode"] == "blackhole"
        assert proxies.forward()["mode"] == "forward"
        assert proxies.status()["ok"]
    finally:
        proxies.stop(0)
    assert not procs.is_running("proxy")
    assert (tmp_path / "logs" / "proxy.log").is_file()


def test_brokers_from_their_collaborators(tmp_path):
    layout = BrokerLayout(BASE, 3)
    procs = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
    tools = FakeTools()
    tls = TlsMaterial(tmp_path / "tls", layout.sasl_ssl_bootstrap, tools)
    proxies = FakeProxies()
    started = []
    kafka = KafkaBrokers(layout, tmp_path, tmp_path / "logs", procs, tools, tls, proxies,
                         lambda: started.append(1))
    assert not kafka.running() and not kafka.sasl_ssl and not kafka.authorizer
    assert kafka.meta() == {} and kafka.data_dir(1) == tmp_path / "kafka-data-1"
    props = kafka.properties(sasl_ssl=True, index=1)
    assert props["node.id"] == 2 and props["min.insync.replicas"] == 2
    assert f"SASL_SSL://127.0.0.1:{layout.ports(1).sasl_ssl}" in props["listeners"]
    assert props["listener.name.sasl_ssl.ssl.keystore.location"] == tls.broker_keystore
    assert props["controller.quorum.voters"].count("@127.0.0.1:") == 3
    kafka.kill(index=2)  # nothing runs: only its proxy is stopped too
    kafka.stop()
    assert proxies.stopped == [2, 0, 1, 2] and started == [] and tools.runs == []


def test_workers_from_their_collaborators(tmp_path):
    procs = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
    tools = KafkaTools(tmp_path, "127.0.0.1:9", 1, kafka_lib=lambda: tmp_path / "lib")
    workers = ConnectWorkers(tmp_path, tmp_path / "logs", BASE, "127.0.0.1:9", 3, procs, tools,
                             broker_running=lambda: False, on_started=lambda: None)
    assert workers.port(1) == BASE + OFF_WORKERS[1]
    assert workers.url(0) == f"http://127.0.0.1:{BASE + OFF_WORKERS[0]}"
    assert workers.rest(1).base_url == workers.url(1)
    text = workers.properties(0, extra={"x.y": "z"}).read_text()
    assert "bootstrap.servers=127.0.0.1:9" in text and "config.storage.replication.factor=3" in text
    assert f"plugin.path={workers.plugin_path_dir()}" in text and "x.y=z" in text
    with pytest.raises(HarnessError, match="start the broker before a worker"):
        workers.start(0)
    assert not (tmp_path / "pids").exists()


def test_backends_and_postgres_from_their_collaborators(tmp_path):
    procs = Processes(tmp_path, tmp_path / "logs", tmp_path / "pids")
    backends = MatrixBackends(tmp_path, tmp_path / "logs", BASE, procs)
    assert backends.mariadb_info()["port"] == BASE + OFF_MARIADB == backends.mariadb_port
    assert len({backends.mosquitto_port, backends.mariadb_port, backends.nats_port,
                backends.http_target_port}) == 4
    pg = PostgresServer(tmp_path, tmp_path / "logs", BASE + OFF_POSTGRES, procs, lambda: None)
    assert pg.info()["jdbc_url"].endswith(f":{BASE + OFF_POSTGRES}/sharesink")
    assert pg.dirs()[0] == tmp_path / "pgdata"


def test_cluster_composes_the_services_on_one_state_dir(tmp_path):
    c = Cluster(tmp_path, port_base=BASE, brokers=3)
    assert (c.brokers, c.replication, c.bootstrap) == (3, 3, c.layout.bootstrap)
    # Each name the tests call is one service's own method (some timed for the test profile,
    # harness/costs.py: the method itself under the timer).
    def own(name):
        return inspect.unwrap(getattr(c, name)).__self__

    assert own("start_broker") is c.kafka and own("start_worker") is c.workers
    assert own("create_topic") is c.tools and c.proxy_blackhole.__self__ is c.proxies
    assert getattr(c.start_worker, "__wrapped__", None) is not None, "timed as a worker start"
    assert c.psql.__self__ is c.pg and c.restart_backend.__self__ is c.backends
    assert c.is_running.__self__ is c.procs and c.ensure_scram_user.__self__ is c.tls
    assert c.worker_url(1) == f"http://127.0.0.1:{BASE + OFF_WORKERS[1]}"
    assert c.components()[:2] == ["broker-0", "proxy-0"] and c.status() == {}
    assert not c.sasl_ssl and c.ca_pem == tmp_path / "tls" / "ca.pem"
