#!/usr/bin/env python3
"""Local test cluster for sharesink: a real Apache Kafka 4.4.0 KRaft broker, Connect workers
(distributed mode) and PostgreSQL, all on 127.0.0.1, started from Maven-resolved jars.

Python standard library only. Library use (tests put ``tests/`` on ``sys.path``)::

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
``SHARESINK_PORT_BASE`` (default 29000, below the ephemeral port range so no client socket can take a listener port); downloads are cached in ``~/.cache/sharesink/``
(``SHARESINK_CACHE``). Every process started is recorded with its PID under ``<state>/pids/``
and ``down()`` stops exactly those.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

try:
    from harness.proxy import command as _proxy_command
except ImportError:  # run as a script: tests/harness/ is sys.path[0]
    from proxy import command as _proxy_command

HARNESS_DIR = Path(__file__).resolve().parent
REPO_ROOT = HARNESS_DIR.parent.parent
KAFKA_DEPS_POM = HARNESS_DIR / "kafka-deps" / "pom.xml"

# The Kafka release of broker, tools and worker: 4.4.0, or an older 4.2.x / 4.3.x for the
# version matrix (SHARESINK_KAFKA_VERSION; `scripts/test.sh --kafka 4.3.1`).
KAFKA_VERSION = os.environ.get("SHARESINK_KAFKA_VERSION", "4.4.0")


def _version(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


# share.version 2 (the broker's KIP-1191 dead letter queue) exists from Kafka 4.4 on; older
# brokers finalize 1, and sharesink's DLQ mode `auto` falls back to Connect's own DLQ there.
SHARE_VERSION = 2 if _version(KAFKA_VERSION) >= (4, 4) else 1
# Third-party Connect plugins, each in its own plugin directory. The first version that Maven
# Central serves is used: the Maven Central reachable from this project's machines does not
# serve connect-file 4.4.0 nor Debezium JDBC 3.6.1.Final (checked 2026-11), so 4.3.1 and
# 3.6.0.Final are what the harness installs there (connect-file < 4.4 gets a one-class shim,
# see _build_appinfo_shim).
CONNECT_FILE_VERSIONS = tuple(dict.fromkeys((KAFKA_VERSION, "4.4.0", "4.3.1")))
DEBEZIUM_JDBC_VERSIONS = ("3.6.1.Final", "3.6.0.Final")
# Apache Iceberg's sink (org.apache.iceberg.connect.IcebergSinkConnector), only so that a share-mode
# connector of it can be refused at validation (it commits its own offsets): the connector's jar and
# what loading, versioning and validating its class needs (iceberg-api for IcebergBuild, the
# relocated Guava), not its catalogs, core or file formats, which a task would need. Every worker
# start scans these classes (about 1,700; checked: the class loads and validates without more). The
# first version whose jars all resolve is used.
ICEBERG_VERSIONS = ("1.10.0", "1.10.1", "1.9.2")
ICEBERG_JARS = ("iceberg-kafka-connect", "iceberg-api", "iceberg-bundled-guava")

# Connect's basic-authentication REST extension (connect-basic-auth-extension): Kafka ships it in
# libs/, so the harness puts it on a worker's class path (start_worker(classpath=...)).
# Maven Central as reachable here does not serve 4.4.0 (checked 2026-12-04): 4.3.1 then, with the
# AppInfoParser shim on a 4.4 worker. Its filter's priority is declared with javax.annotation in
# 4.2/4.3, which Jersey 3 does not read: it runs at the default priority (USER) there.
BASIC_AUTH_VERSIONS = tuple(dict.fromkeys((KAFKA_VERSION, "4.4.0", "4.3.1")))
BASIC_AUTH_REST_EXTENSION = \
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"

# Main classes of Kafka 4.4.0 (checked with `unzip -l` on the resolved jars).
BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
SHARE_CONSUMER_PERF = "org.apache.kafka.tools.ShareConsumerPerformance"
SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
LEADER_ELECTION_COMMAND = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
CONNECT_DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"

SCRAM_USER = "sharesink"
SCRAM_PASSWORD = "sharesink-secret"
TLS_PASSWORD = "sharesink-tls"

PG_DB = "sharesink"
PG_USER = "sharesink"
PG_PASSWORD = "sharesink"

# Port offsets from SHARESINK_PORT_BASE (DEVELOPING.md). +88 is taken by the tests' credential
# recorder (credential_recorder.py, OFF_CREDENTIAL_RECORDER).
OFF_BROKER = 92
OFF_CONTROLLER = 93
OFF_SASL_SSL = 94
OFF_WORKERS = (83, 84)
OFF_POSTGRES = 32
# The broker's PROXIED listener, advertised as the blackhole proxy's port (tests/harness/proxy.py),
# so that clients bootstrapping there keep going through the proxy; and the proxy's control port.
OFF_PROXIED = 95
OFF_PROXY = 96
OFF_PROXY_CONTROL = 97
PROXY_SCRIPT = HARNESS_DIR / "proxy.py"

# sharesink's REST extension (the KIP's switch, consumer.override.group.protocol=share), enabled
# on every worker that has the sharesink plugin; a worker without it could not load the class.
SHARE_MODE_REST_EXTENSION = "io.sharesink.connect.rest.ShareModeRestExtension"
# Several brokers (`up --brokers 3`): broker i's ports are a block of its own, away from the
# single-broker offsets above: +100 + 10 i PLAINTEXT, +1 controller, +2 SASL_SSL, +3 PROXIED,
# +4 its blackhole proxy, +5 the proxy's control port.
OFF_MULTI_BROKERS = 100
MULTI_BROKER_STRIDE = 10
MAX_BROKERS = 5


class BrokerPorts(NamedTuple):
    plaintext: int
    controller: int
    sasl_ssl: int
    proxied: int
    proxy: int
    proxy_control: int


class HarnessError(RuntimeError):
    """A cluster component could not be set up; the message points at the log to read."""


# --------------------------------------------------------------------------------------------
# small helpers


def _log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    for cand in ([Path(home) / "bin" / "java"] if home else []) + [
        Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
    ]:
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("java")
    if not found:
        raise HarnessError("no java found (set JAVA_HOME; JDK 17 expected)")
    return found


def _tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
        return "\n".join(data.splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _proc_start_time(pid: int) -> Optional[str]:
    """Kernel start time of a process (field 22 of /proc/PID/stat), to tell a recycled PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _proc_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2 :].split()[0]
    return state not in ("Z", "X")


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _props(d: Mapping[str, Any]) -> str:
    out = []
    for k, v in d.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        out.append(f"{k}={v}")
    return "\n".join(out) + "\n"


@contextlib.contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd: Sequence[str], *, timeout: float = 600, cwd: Optional[Path] = None,
         env: Optional[Mapping[str, str]] = None, what: str = "") -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise HarnessError(f"{what or cmd[0]} timed out after {timeout}s: {shlex.join(cmd)}") from e
    return proc


# --------------------------------------------------------------------------------------------
# jar and plugin resolution (Maven Central -> ~/.m2 -> ~/.cache/sharesink)


def cache_dir() -> Path:
    return Path(os.environ.get("SHARESINK_CACHE") or Path.home() / ".cache" / "sharesink")


def _mvn(args: Sequence[str], what: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    mvn = shutil.which("mvn")
    if not mvn:
        raise HarnessError("mvn not found: install Maven (apt-get install -y maven)")
    cmd = [mvn, "-q", "-B", "-f", str(KAFKA_DEPS_POM)] + list(args)
    return _run(cmd, timeout=timeout, what=what)


def _marker_ok(marker: Path, key: str) -> bool:
    try:
        return json.loads(marker.read_text()).get("key") == key
    except (OSError, ValueError):
        return False


def ensure_kafka_lib() -> Path:
    """The directory with every jar of the broker, tools and Connect runtime (resolved once)."""
    root = cache_dir() / f"kafka-{KAFKA_VERSION}"
    lib = root / "lib"
    marker = root / ".complete"
    key = hashlib.sha256(KAFKA_DEPS_POM.read_bytes()).hexdigest()
    if _marker_ok(marker, key) and lib.is_dir():
        return lib
    with _file_lock(cache_dir() / ".lock"):
        if _marker_ok(marker, key) and lib.is_dir():
            return lib
        _log(f"resolving Kafka {KAFKA_VERSION} jars into {lib} (Maven Central, cached in ~/.m2)")
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="lib.", dir=root))
        proc = _mvn(["dependency:copy-dependencies", f"-DoutputDirectory={tmp}",
                     "-DincludeScope=runtime", f"-Dkafka.version={KAFKA_VERSION}"],
                    what="resolving Kafka jars")
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise HarnessError(f"mvn dependency:copy-dependencies failed:\n{proc.stdout[-4000:]}")
        jars = sorted(p.name for p in tmp.glob("*.jar"))
        needed = [f"kafka_2.13-{KAFKA_VERSION}.jar", f"kafka-tools-{KAFKA_VERSION}.jar",
                  f"connect-runtime-{KAFKA_VERSION}.jar", "log4j-slf4j2-impl-"]
        missing = [n for n in needed if not any(j.startswith(n) for j in jars)]
        if missing:
            shutil.rmtree(tmp, ignore_errors=True)
            raise HarnessError(f"resolved Kafka lib lacks {missing}")
        if any(j.startswith("connect-file-") for j in jars):
            raise HarnessError("connect-file must not be on the worker classpath")
        if lib.exists():
            shutil.rmtree(lib)
        os.replace(tmp, lib)
        _write_atomic(marker, json.dumps({"key": key, "jars": jars}, indent=1))
        return lib


def _copy_artifact(coords: str, outdir: Path) -> bool:
    proc = _mvn(["dependency:copy", f"-Dartifact={coords}", f"-DoutputDirectory={outdir}",
                 "-Dmdep.overWriteReleases=true"], what=f"resolving {coords}")
    return proc.returncode == 0


# The Prometheus JMX exporter's Java agent, from Maven Central (the newest version served here).
JMX_EXPORTER = "io.prometheus.jmx:jmx_prometheus_javaagent:1.0.1"


def ensure_jmx_exporter() -> Path:
    """The Prometheus JMX exporter agent jar (ops/prometheus/jmx-exporter.yaml's rules)."""
    version = JMX_EXPORTER.rsplit(":", 1)[1]
    jar = cache_dir() / "agents" / f"jmx_prometheus_javaagent-{version}.jar"
    if jar.is_file():
        return jar
    with _file_lock(cache_dir() / ".lock"):
        if not jar.is_file():
            jar.parent.mkdir(parents=True, exist_ok=True)
            if not _copy_artifact(JMX_EXPORTER, jar.parent) or not jar.is_file():
                raise HarnessError(f"could not resolve {JMX_EXPORTER} from Maven Central")
    return jar


def ensure_plugin(name: str) -> Path:
    """Own plugin directory of a third-party plugin: 'connect-file', 'debezium-jdbc' or
    'iceberg'."""
    base = cache_dir() / "plugins"
    # connect-file follows the worker's release: one directory per Kafka version.
    dir_name = name if name != "connect-file" or KAFKA_VERSION == "4.4.0" else f"{name}-{KAFKA_VERSION}"
    target = base / dir_name
    marker = base / f".{dir_name}.complete"
    key = {"connect-file": ",".join(CONNECT_FILE_VERSIONS) + "+shim1",
           "debezium-jdbc": ",".join(DEBEZIUM_JDBC_VERSIONS),
           "iceberg": ",".join(ICEBERG_VERSIONS) + ":" + ",".join(ICEBERG_JARS)}.get(name)
    if key is None:
        raise HarnessError(f"unknown plugin {name!r}")
    if _marker_ok(marker, key) and target.is_dir():
        return target
    with _file_lock(cache_dir() / ".lock"):
        if _marker_ok(marker, key) and target.is_dir():
            return target
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=base))
        chosen = None
        try:
            if name == "connect-file":
                for v in CONNECT_FILE_VERSIONS:
                    if _copy_artifact(f"org.apache.kafka:connect-file:{v}", tmp):
                        chosen = v
                        break
            elif name == "iceberg":
                for v in ICEBERG_VERSIONS:
                    if all(_copy_artifact(f"org.apache.iceberg:{a}:{v}", tmp) for a in ICEBERG_JARS):
                        chosen = v
                        break
                    for jar in tmp.glob("*.jar"):
                        jar.unlink()
            else:
                dl = Path(tempfile.mkdtemp(prefix=".dl.", dir=base))
                try:
                    for v in DEBEZIUM_JDBC_VERSIONS:
                        if _copy_artifact(f"io.debezium:debezium-connector-jdbc:{v}:tar.gz:plugin", dl):
                            (archive,) = list(dl.glob("*.tar.gz"))
                            with tarfile.open(archive) as tf:
                                for m in tf.getmembers():
                                    if m.name.startswith("/") or ".." in Path(m.name).parts:
                                        raise HarnessError(f"unsafe path in {archive}: {m.name}")
                                tf.extractall(tmp)
                            chosen = v
                            break
                finally:
                    shutil.rmtree(dl, ignore_errors=True)
            if chosen is None:
                raise HarnessError(f"no version of plugin {name} resolves from Maven Central")
            if name == "connect-file" and chosen != KAFKA_VERSION and \
                    _version(KAFKA_VERSION) >= (4, 4) > _version(chosen):
                _build_appinfo_shim(tmp)
            preferred = {"connect-file": CONNECT_FILE_VERSIONS, "iceberg": ICEBERG_VERSIONS}.get(
                name, DEBEZIUM_JDBC_VERSIONS)[0]
            if chosen != preferred:
                _log(f"plugin {name}: using version {chosen} (preferred version not served)")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        _write_atomic(marker, json.dumps({"key": key, "version": chosen}))
        return target


def ensure_basic_auth_extension() -> Path:
    """Directory of the jars of Connect's basic-auth REST extension (and the AppInfoParser shim
    when it predates the worker's 4.4), for a worker's class path."""
    base = cache_dir() / "classpath"
    dir_name = f"connect-basic-auth-extension-{KAFKA_VERSION}"
    target = base / dir_name
    marker = base / f".{dir_name}.complete"
    key = ",".join(BASIC_AUTH_VERSIONS) + "+shim1"
    if _marker_ok(marker, key) and target.is_dir():
        return target
    with _file_lock(cache_dir() / ".lock"):
        if _marker_ok(marker, key) and target.is_dir():
            return target
        base.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dir_name}.", dir=base))
        try:
            chosen = next((v for v in BASIC_AUTH_VERSIONS if _copy_artifact(
                f"org.apache.kafka:connect-basic-auth-extension:{v}", tmp)), None)
            if chosen is None:
                raise HarnessError("no version of connect-basic-auth-extension resolves")
            if _version(KAFKA_VERSION) >= (4, 4) > _version(chosen):
                _build_appinfo_shim(tmp)
            if chosen != BASIC_AUTH_VERSIONS[0]:
                _log(f"connect-basic-auth-extension: using {chosen} (preferred version not served)")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        _write_atomic(marker, json.dumps({"key": key, "version": chosen}))
        return target


_APPINFO_SHIM = """package org.apache.kafka.common.utils;

/** Compatibility shim (sharesink test harness): Kafka 4.4 moved AppInfoParser to
 *  org.apache.kafka.common.utils.internals; connect-file < 4.4 still calls the old class from
 *  version(). Only used in the connect-file plugin directory when connect-file 4.4.0 is not served. */
public final class AppInfoParser {
    private AppInfoParser() { }
    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }
    public static String getCommitId() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getCommitId();
    }
}
"""


def _build_appinfo_shim(plugin_dir: Path) -> None:
    """connect-file from Kafka < 4.4 calls org.apache.kafka.common.utils.AppInfoParser, which
    Kafka 4.4 moved to ...utils.internals. A plugin class loader looks in its own jars after the
    parent misses, so a one-class shim jar in the plugin's own directory bridges the move."""
    javac = Path(_java()).resolve().parent / "javac"
    if not javac.exists():
        javac = Path(shutil.which("javac") or "javac")
    work = Path(tempfile.mkdtemp(prefix=".shim.", dir=plugin_dir.parent))
    try:
        src = work / "src" / "org" / "apache" / "kafka" / "common" / "utils" / "AppInfoParser.java"
        src.parent.mkdir(parents=True)
        src.write_text(_APPINFO_SHIM)
        out = work / "classes"
        p = _run([str(javac), "--release", "11", "-nowarn", "-cp", str(ensure_kafka_lib() / "*"),
                  "-d", str(out), str(src)], timeout=300, what="javac (AppInfoParser shim)")
        if p.returncode != 0:
            raise HarnessError(f"compiling the AppInfoParser shim failed:\n{p.stdout}")
        with zipfile.ZipFile(plugin_dir / "kafka-appinfo-shim.jar", "w") as zf:
            for f in sorted(out.rglob("*.class")):
                zf.write(f, f.relative_to(out).as_posix())
    finally:
        shutil.rmtree(work, ignore_errors=True)


# The third-party plugin directories every worker's plugin.path holds (ensure_plugin).
THIRD_PARTY_PLUGINS = ("connect-file", "debezium-jdbc", "iceberg")

# Sinks of the tests' own (tests/sinks/<name>/, one Maven module each), e.g. the buffering
# sink of the durability tests: built here when their sources change, each installed in its own
# plugin directory on the workers' plugin.path (never into the sharesink plugin directory).
TEST_SINKS_DIR = REPO_ROOT / "tests" / "sinks"
TEST_SINKS = ("buffering-sink",)


def ensure_test_sink(name: str) -> Path:
    """Plugin directory holding the jar of test sink `name`, built with Maven into the cache
    (keyed by a hash of its pom and sources, so it is rebuilt only when they change)."""
    src = TEST_SINKS_DIR / name
    files = sorted(p for p in [src / "pom.xml", *(src / "src").rglob("*")] if p.is_file())
    if not files:
        raise HarnessError(f"test sink {name}: no sources in {src}")
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(src).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    base = cache_dir() / "test-sinks"
    target = base / f"{name}-{h.hexdigest()[:16]}"
    jar = target / f"{name}.jar"
    if jar.is_file():
        return target
    with _file_lock(cache_dir() / ".lock"):
        if jar.is_file():
            return target
        base.mkdir(parents=True, exist_ok=True)
        build = Path(tempfile.mkdtemp(prefix=f".{name}.build.", dir=base))
        try:
            _log(f"building test sink {name} ({src}) into {target}")
            mvn = shutil.which("mvn")
            if not mvn:
                raise HarnessError("mvn not found: install Maven (apt-get install -y maven)")
            proc = _run([mvn, "-q", "-B", "-f", str(src / "pom.xml"), "package",
                         f"-Dtest.sink.build.dir={build}"], timeout=600, what=f"building {name}")
            built = sorted(build.glob("*.jar"))
            if proc.returncode != 0 or len(built) != 1:
                raise HarnessError(f"building test sink {name} failed:\n{proc.stdout[-4000:]}")
            tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=base))
            shutil.copy2(built[0], tmp / jar.name)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        return target


def plugin_version(name: str) -> Optional[str]:
    try:
        return json.loads((cache_dir() / "plugins" / f".{name}.complete").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def default_plugin_archive() -> Optional[Path]:
    """SHARESINK_PLUGIN_ARCHIVE, else the newest java/target/sharesink-*-plugin.zip."""
    env = os.environ.get("SHARESINK_PLUGIN_ARCHIVE")
    if env:
        return Path(env)
    cands = sorted(glob.glob(str(REPO_ROOT / "java" / "target" / "sharesink-*-plugin.zip")),
                   key=lambda p: os.path.getmtime(p))
    return Path(cands[-1]) if cands else None


# --------------------------------------------------------------------------------------------
# log4j2 configurations

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT">
      <PatternLayout pattern="{pattern}"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="{root}"><AppenderRef ref="STDOUT"/></Root>
{loggers}
  </Loggers>
</Configuration>
"""


def _log4j2(pattern: str, root: str, loggers: Mapping[str, str]) -> str:
    ls = "\n".join(f'    <Logger name="{k}" level="{v}"/>' for k, v in loggers.items())
    return _LOG4J2.format(pattern=pattern.replace("&", "&amp;").replace("<", "&lt;"),
                          root=root, loggers=ls)


BROKER_LOG4J2 = _log4j2("[%d] %p %m (%c)%n", "INFO", {
    "kafka.request.logger": "WARN",
    "kafka.log.LogCleaner": "WARN",
    "org.apache.kafka.storage.internals.log": "WARN",
    "kafka.log": "WARN",
    "state.change.logger": "WARN",
    "org.apache.kafka.controller": "INFO",
    "kafka.controller": "INFO",
})
# Connect's own pattern (config/connect-log4j2.yaml): shows the connector context.
WORKER_LOG4J2 = _log4j2("[%d] %p %X{connector.context}%m (%c:%L)%n", "INFO", {
    "org.reflections": "ERROR",
    "org.apache.kafka.clients.consumer.internals": "WARN",
    "org.apache.kafka.clients.producer.internals": "WARN",
    "org.apache.kafka.common.utils.AppInfoParser": "WARN",
    "org.apache.kafka.clients.admin.AdminClientConfig": "WARN",
    "org.apache.kafka.clients.producer.ProducerConfig": "WARN",
    "org.apache.kafka.clients.consumer.ConsumerConfig": "WARN",
    "org.apache.kafka.common.config.AbstractConfig": "WARN",
    "io.sharesink": "DEBUG",
})
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


# --------------------------------------------------------------------------------------------
# REST client for a Connect worker


class RestError(HarnessError):
    def __init__(self, method: str, url: str, status: int, body: Any):
        super().__init__(f"{method} {url} -> HTTP {status}: {body}")
        self.status = status
        self.body = body


class Rest:
    """Tiny JSON client for the Connect REST API."""

    def __init__(self, base_url: str, log_path: Optional[Path] = None,
                 headers: Optional[Mapping[str, str]] = None):
        """`headers`: sent with every request (e.g. Authorization for a worker with basic auth)."""
        self.base_url = base_url.rstrip("/")
        self.log_path = log_path
        self.headers = dict(headers or {})

    def request(self, method: str, path: str, body: Any = None, *, timeout: float = 60,
                check: bool = True) -> Any:
        url = self.base_url + (path if path.startswith("/") else "/" + path)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        for name, value in self.headers.items():
            req.add_header(name, value)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as e:
            raw = e.read()
            status = e.code
        text = raw.decode("utf-8", "replace")
        try:
            parsed = json.loads(text) if text.strip() else None
        except ValueError:
            parsed = text
        if status >= 400 and check:
            raise RestError(method, url, status, parsed)
        return parsed

    def get(self, path: str, **kw) -> Any:
        # A GET is safe to repeat. Right after a config change the worker answers 409, or 500
        # "a rebalance is expected", until its rebalance completes (stock Connect behaviour):
        # wait that out rather than fail a test on the race.
        return self._retry_rebalancing(lambda: self.request("GET", path, **kw))

    def post(self, path: str, body: Any = None, **kw) -> Any:
        return self.request("POST", path, body if body is not None else {}, **kw)

    def put(self, path: str, body: Any = None, **kw) -> Any:
        return self.request("PUT", path, body if body is not None else {}, **kw)

    def delete(self, path: str, **kw) -> Any:
        return self.request("DELETE", path, **kw)

    def patch(self, path: str, body: Any = None, **kw) -> Any:
        return self.request("PATCH", path, body if body is not None else {}, **kw)

    # -- Connect helpers

    @staticmethod
    def _retry(fn, retriable, timeout: float = 60):
        """Call fn until it returns, or until it raises a RestError that is not retriable(e) or
        the timeout has passed."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return fn()
            except RestError as e:
                if retriable(e) and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise

    def _retry_busy(self, fn, timeout: float = 60):
        """Retry while the worker answers 409 (rebalance) or 5xx (starting)."""
        return self._retry(fn, lambda e: e.status in (409, 500, 503), timeout)

    @staticmethod
    def _rebalancing(e: "RestError") -> bool:
        message = e.body.get("message", "") if isinstance(e.body, dict) else str(e.body)
        return e.status == 409 or (e.status == 500 and "rebalance" in message.lower())

    def _retry_rebalancing(self, fn, timeout: float = 60):
        return self._retry(fn, self._rebalancing, timeout)

    def plugins(self, connectors_only: bool = True) -> List[dict]:
        q = "" if connectors_only else "?connectorsOnly=false"
        return self.get("/connector-plugins" + q)

    def connectors(self) -> List[str]:
        return self.get("/connectors")

    def put_connector(self, name: str, config: Mapping[str, Any]) -> dict:
        cfg = {k: str(v) if not isinstance(v, str) else v for k, v in config.items()}
        q = urllib.parse.quote(name, safe="")
        return self._retry_busy(lambda: self.put(f"/connectors/{q}/config", cfg))

    def delete_connector(self, name: str, missing_ok: bool = True) -> None:
        q = urllib.parse.quote(name, safe="")
        try:
            self._retry_busy(lambda: self.delete(f"/connectors/{q}"))
        except RestError as e:
            if not (missing_ok and e.status == 404):
                raise

    def connector_status(self, name: str) -> dict:
        q = urllib.parse.quote(name, safe="")
        return self.get(f"/connectors/{q}/status")

    def wait_connector_running(self, name: str, tasks: Optional[int] = None,
                               timeout: float = 60) -> dict:
        """Wait until the connector and its tasks (exactly `tasks` of them if given, else at
        least one) are RUNNING; a FAILED connector or task fails at once with its trace."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                st = self.connector_status(name)
            except RestError as e:
                last = e
                time.sleep(0.5)
                continue
            last = st
            conn_state = st.get("connector", {}).get("state")
            ts = st.get("tasks", [])
            if conn_state == "FAILED":
                raise HarnessError(f"connector {name} FAILED:\n{st['connector'].get('trace')}"
                                   + self._hint())
            for t in ts:
                if t.get("state") == "FAILED":
                    raise HarnessError(f"connector {name} task {t.get('id')} FAILED:\n"
                                       f"{t.get('trace')}" + self._hint())
            if conn_state == "RUNNING" and ts and all(t.get("state") == "RUNNING" for t in ts):
                if tasks is None or len(ts) == tasks:
                    return st
            time.sleep(0.5)
        raise HarnessError(f"connector {name} not RUNNING (tasks={tasks}) within {timeout}s; "
                           f"last status: {last}" + self._hint())

    def validate(self, connector_class: str, config: Mapping[str, Any]) -> dict:
        cfg = {k: str(v) for k, v in config.items()}
        cfg.setdefault("connector.class", connector_class)
        q = urllib.parse.quote(connector_class, safe="")
        return self._retry_busy(lambda: self.put(f"/connector-plugins/{q}/config/validate", cfg))

    @staticmethod
    def validation_errors(result: Mapping[str, Any]) -> Dict[str, List[str]]:
        """{config name: [errors]} from a validate() result (only names with errors)."""
        return {c["value"]["name"]: c["value"]["errors"] for c in result.get("configs", [])
                if c.get("value", {}).get("errors")}

    def _hint(self) -> str:
        return f"\n(worker log: {self.log_path})" if self.log_path else ""


# --------------------------------------------------------------------------------------------
# the cluster


class Cluster:
    def __init__(self, state_dir: Union[str, Path, None] = None, port_base: Optional[int] = None,
                 brokers: Optional[int] = None):
        """`brokers`: how many KRaft nodes; default what the state dir's cluster was formatted
        with, else SHARESINK_BROKERS, else 1."""
        self.state_dir = Path(state_dir or os.environ.get("SHARESINK_CLUSTER_DIR")
                              or REPO_ROOT / "build" / "cluster").resolve()
        self.port_base = int(port_base if port_base is not None
                             else os.environ.get("SHARESINK_PORT_BASE", "29000"))
        recorded = self._load_broker_meta().get("brokers")
        self.brokers = int(brokers or recorded or os.environ.get("SHARESINK_BROKERS") or 1)
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise HarnessError(f"brokers={self.brokers}: 1 to {MAX_BROKERS}")
        first = self.broker_ports(0)
        self.broker_port = first.plaintext
        self.controller_port = first.controller
        self.sasl_ssl_port = first.sasl_ssl
        self.postgres_port = self.port_base + OFF_POSTGRES
        self.proxied_port = first.proxied
        self.proxy_port = first.proxy
        self.proxy_control_port = first.proxy_control
        every = [self.broker_ports(i) for i in range(self.brokers)]
        self.bootstrap = ",".join(f"127.0.0.1:{p.plaintext}" for p in every)
        # Through the blackhole proxies (proxy_blackhole() etc.); brokers advertise their proxy.
        self.proxied_bootstrap = ",".join(f"127.0.0.1:{p.proxy}" for p in every)
        self.sasl_ssl_bootstrap = ",".join(f"127.0.0.1:{p.sasl_ssl}" for p in every)
        self.logs_dir = self.state_dir / "logs"
        self.pids_dir = self.state_dir / "pids"
        self.tls_dir = self.state_dir / "tls"
        self._popen: Dict[str, subprocess.Popen] = {}
        self._kafka_lib: Optional[Path] = None
        self._pg_bin: Optional[Path] = None
        self.sasl_ssl = self._load_broker_meta().get("sasl_ssl", False)

    # ---- basic properties

    @property
    def kafka_lib(self) -> Path:
        if self._kafka_lib is None:
            self._kafka_lib = ensure_kafka_lib()
        return self._kafka_lib

    @property
    def classpath(self) -> str:
        return str(self.kafka_lib / "*")

    def worker_port(self, index: int) -> int:
        if index < 0 or index >= len(OFF_WORKERS):
            raise HarnessError(f"worker index {index} out of range (0..{len(OFF_WORKERS) - 1})")
        return self.port_base + OFF_WORKERS[index]

    def worker_url(self, index: int = 0) -> str:
        return f"http://127.0.0.1:{self.worker_port(index)}"

    def rest(self, index: int = 0, headers: Optional[Mapping[str, str]] = None) -> Rest:
        return Rest(self.worker_url(index), self.logs_dir / f"worker-{index}.log", headers)

    # TLS material (valid after start_broker(sasl_ssl=True))
    @property
    def ca_pem(self) -> Path:
        return self.tls_dir / "ca.pem"

    @property
    def truststore_jks(self) -> Path:
        return self.tls_dir / "truststore.jks"

    @property
    def truststore_p12(self) -> Path:
        return self.tls_dir / "truststore.p12"

    truststore = truststore_p12
    truststore_password = TLS_PASSWORD
    scram_user = SCRAM_USER
    scram_password = SCRAM_PASSWORD

    @property
    def sasl_ssl_client_properties(self) -> Path:
        """Client config file (SCRAM-SHA-512 over TLS) for Kafka tools and tests."""
        return self.tls_dir / "client-sasl-ssl.properties"

    def sasl_ssl_client_properties_file(self, mechanism: str = "SCRAM-SHA-512") -> Path:
        """A client config file for `mechanism` (SCRAM-SHA-512 or SCRAM-SHA-256), for
        `--command-config` of the Kafka tools."""
        path = self.tls_dir / f"client-sasl-ssl-{mechanism.lower()}.properties"
        _write_atomic(path, _props({k: v for k, v in self.sasl_ssl_client_config(mechanism).items()
                                    if k != "bootstrap.servers"}))
        return path

    def sasl_ssl_client_config(self, mechanism: str = "SCRAM-SHA-512") -> Dict[str, str]:
        return {
            "bootstrap.servers": self.sasl_ssl_bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";',
            "ssl.truststore.location": str(self.truststore_p12),
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.password": TLS_PASSWORD,
        }

    # ---- process bookkeeping

    def _pidfile(self, name: str) -> Path:
        return self.pids_dir / f"{name}.pid"

    def _record(self, name: str, proc: subprocess.Popen, stop_signal: int) -> None:
        self._popen[name] = proc
        _write_atomic(self._pidfile(name), json.dumps({
            "pid": proc.pid, "start": _proc_start_time(proc.pid), "name": name,
            "stop_signal": int(stop_signal), "state_dir": str(self.state_dir),
        }))

    def _recorded(self, name: str) -> Optional[dict]:
        try:
            info = json.loads(self._pidfile(name).read_text())
        except (OSError, ValueError):
            return None
        return info

    def is_running(self, name: str) -> bool:
        p = self._popen.get(name)
        if p is not None:
            return p.poll() is None
        info = self._recorded(name)
        if not info:
            return False
        pid = info["pid"]
        return _proc_alive(pid) and _proc_start_time(pid) == info.get("start")

    def _signal(self, name: str, sig: int) -> Optional[int]:
        p = self._popen.get(name)
        if p is not None:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, sig)
                return p.pid
            return None
        info = self._recorded(name)
        if not info:
            return None
        pid = info["pid"]
        if not _proc_alive(pid) or _proc_start_time(pid) != info.get("start"):
            return None  # gone, or the PID now belongs to somebody else
        with contextlib.suppress(ProcessLookupError):
            try:
                os.killpg(pid, sig)
            except PermissionError:
                os.kill(pid, sig)
        return pid

    def _wait_gone(self, name: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        p = self._popen.get(name)
        while time.monotonic() < deadline:
            if p is not None:
                if p.poll() is not None:
                    return True
            elif not self.is_running(name):
                return True
            time.sleep(0.1)
        return False

    def _stop(self, name: str, timeout: float = 30, kill: bool = False) -> None:
        info = self._recorded(name) or {}
        sig = signal.SIGKILL if kill else signal.Signals(info.get("stop_signal", signal.SIGTERM))
        pid = self._signal(name, sig)
        if pid is not None:
            if not self._wait_gone(name, 10 if kill else timeout):
                _log(f"{name} (pid {pid}) did not stop after {sig.name} in {timeout}s; SIGKILL")
                self._signal(name, signal.SIGKILL)
                if not self._wait_gone(name, 10):
                    raise HarnessError(f"{name} (pid {pid}) survives SIGKILL")
        p = self._popen.pop(name, None)
        if p is not None:
            with contextlib.suppress(Exception):
                p.wait(timeout=1)
        with contextlib.suppress(FileNotFoundError):
            self._pidfile(name).unlink()

    def _stop_together(self, names: Sequence[str], timeout: float = 30) -> None:
        """Signals every process in `names` at once, then waits for each (the last KRaft nodes of
        a quorum cannot finish a controlled shutdown once the others are gone)."""
        for n in names:
            info = self._recorded(n) or {}
            self._signal(n, signal.Signals(info.get("stop_signal", signal.SIGTERM)))
        for n in names:
            self._stop(n, timeout=timeout)

    def _spawn(self, name: str, cmd: Sequence[str], log: Path, stop_signal: int = signal.SIGTERM,
               env: Optional[Mapping[str, str]] = None, **popen_kw) -> subprocess.Popen:
        if self.is_running(name):
            raise HarnessError(f"{name} is already running (pid file {self._pidfile(name)})")
        log.parent.mkdir(parents=True, exist_ok=True)
        self.pids_dir.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as lf:
            lf.write(f"\n===== {time.strftime('%Y-%m-%dT%H:%M:%S')} start {name}: "
                     f"{shlex.join(cmd)}\n".encode())
            lf.flush()
            proc = subprocess.Popen(list(cmd), stdout=lf, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=dict(env) if env is not None else None,
                                    cwd=str(self.state_dir), **popen_kw)
        self._record(name, proc, stop_signal)
        return proc

    def current_log(self, name: str) -> str:
        """The log of component `name` (broker, worker-0, postgres, ...) since its last start."""
        text = (self.logs_dir / f"{name}.log").read_text(errors="replace") \
            if (self.logs_dir / f"{name}.log").exists() else ""
        i = text.rfind(f" start {name}: ")
        return text[text.rfind("\n", 0, i) + 1:] if i >= 0 else text

    def _check_port_free(self, port: int, what: str) -> None:
        if _port_open(port):
            raise HarnessError(
                f"port {port} ({what}) is already in use by a process this harness did not record "
                f"in {self.pids_dir}; another cluster may be running: set SHARESINK_PORT_BASE "
                f"and SHARESINK_CLUSTER_DIR to separate values")

    def _wait(self, what: str, cond, timeout: float, log: Path, name: Optional[str] = None,
              interval: float = 0.3):
        deadline = time.monotonic() + timeout
        last_exc: Optional[BaseException] = None
        while time.monotonic() < deadline:
            if name is not None and not self.is_running(name):
                raise HarnessError(f"{what}: process exited; see {log}\n--- last lines:\n{_tail(log)}")
            try:
                r = cond()
                if r:
                    return r
            except Exception as e:  # noqa: BLE001 - readiness probes fail in many ways
                last_exc = e
            time.sleep(interval)
        raise HarnessError(f"{what}: not ready after {timeout}s (last error: {last_exc}); "
                           f"see {log}\n--- last lines:\n{_tail(log)}")

    # ---- java

    def java_cmd(self, main_class: str, args: Sequence[str] = (), *, heap: str = "512m",
                 jvm_opts: Sequence[str] = (), log4j2: Optional[Path] = None,
                 classpath: Sequence[Path] = ()) -> List[str]:
        cmd = [_java(), f"-Xmx{heap}", "-Djava.awt.headless=true"]
        if log4j2 is None:
            log4j2 = self._tools_log4j2()
        cmd.append(f"-Dlog4j2.configurationFile={log4j2}")
        cmd += list(jvm_opts)
        cp = os.pathsep.join([self.classpath] + [str(Path(d) / "*") for d in classpath])
        cmd += ["-cp", cp, main_class] + [str(a) for a in args]
        return cmd

    def _tools_log4j2(self) -> Path:
        p = self.state_dir / "config" / "tools-log4j2.xml"
        if not p.exists():
            _write_atomic(p, TOOLS_LOG4J2)
        return p

    def run_tool(self, main_class: str, *args: Any, check: bool = True, timeout: float = 120,
                 input: Optional[str] = None, stdin=None, heap: str = "512m",
                 jvm_opts: Sequence[str] = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
                 ) -> subprocess.CompletedProcess:
        """Run a Kafka tool class on the Kafka classpath; text output (stdout, stderr)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.java_cmd(main_class, [str(a) for a in args], heap=heap, jvm_opts=jvm_opts)
        try:
            proc = subprocess.run(cmd, input=input, stdin=stdin if input is None else None,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"{main_class} timed out after {timeout}s: {shlex.join(cmd)}\n"
                               f"stdout: {(e.stdout or '')[-2000:]}\nstderr: {(e.stderr or '')[-2000:]}"
                               ) from e
        if check and proc.returncode != 0:
            raise HarnessError(f"{main_class} exited {proc.returncode}: {' '.join(map(str, args))}\n"
                               f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}")
        return proc

    # ---- broker(s)
    #
    # One broker (the default): process "broker", offsets OFF_BROKER.. (DEVELOPING.md). Several
    # (`brokers=3`, `up --brokers 3`): KRaft nodes in combined mode "broker-0".."broker-<n-1>",
    # node ids 1..n, every node a voter, each with its own block of ports (broker_ports()), its
    # own data dir, log and blackhole proxy; replication factor 3 and min.insync.replicas 2 for
    # topics and every internal topic.

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

    def _broker_properties(self, sasl_ssl: bool, index: int = 0) -> Dict[str, Any]:
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
                     timeout: float = 120, index: Optional[int] = None) -> str:
        """Start the KRaft node(s) (formatting their storage on first start): broker `index`, or
        every broker with None (several start together: none finishes starting without a
        controller quorum).

        Data in the state dir is kept across stop/start; `fresh=True` wipes it first. sasl_ssl
        None keeps what the cluster was started with. Returns the PLAINTEXT bootstrap."""
        if sasl_ssl is None:
            sasl_ssl = bool(self.sasl_ssl)
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
            _write_atomic(props_files[i], _props(self._broker_properties(sasl_ssl, i)))
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

    def restart_broker(self, index: Optional[int] = None, timeout: float = 120) -> str:
        """Stop and start broker `index` (every broker with None) with the same settings."""
        self.stop_broker(index=index)
        return self.start_broker(timeout=timeout, index=index)

    # ---- leaders and replicas (several brokers)

    def describe_topic(self, topic: str) -> Dict[int, Dict[str, Any]]:
        """{partition: {'leader': node id (-1 none), 'replicas': [...], 'isr': [...]}} from
        TopicCommand --describe."""
        out = self.run_tool(TOPIC_COMMAND, "--bootstrap-server", self.bootstrap, "--describe",
                            "--topic", topic).stdout
        res: Dict[int, Dict[str, Any]] = {}
        for line in out.splitlines():
            fields = dict(re.findall(r"(\w+):\s*(\S*)", line))
            if "Partition" not in fields or not fields["Partition"].isdigit():
                continue
            ids = lambda s: [int(x) for x in s.split(",") if x.strip().lstrip("-").isdigit()]
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
        deadline = time.monotonic() + timeout
        while True:
            out = self.run_tool(REASSIGN_COMMAND, "--bootstrap-server", self.bootstrap,
                                "--reassignment-json-file", path, "--verify", check=False,
                                timeout=120).stdout
            if "is still in progress" not in out and "complete" in out:
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"reassignment of {topic} not complete after {timeout}s:\n{out}")
            time.sleep(1)

    def wait_in_sync(self, topic: str, timeout: float = 120) -> None:
        """Waits until every replica of every partition of `topic` is in sync and led."""
        deadline = time.monotonic() + timeout
        while True:
            d = self.describe_topic(topic)
            if d and all(v["leader"] >= 0 and sorted(v["isr"]) == sorted(v["replicas"])
                         for v in d.values()):
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"{topic} not in sync after {timeout}s: {d}")
            time.sleep(1)

    # ---- blackhole proxy in front of each broker's PROXIED listener (tests/harness/proxy.py)

    def start_proxy(self, index: int = 0, timeout: float = 30) -> str:
        """Start broker `index`'s proxy (started with the broker); returns `proxied_bootstrap`."""
        name = self.proxy_name(index)
        if self.is_running(name):
            return self.proxied_bootstrap
        ports = self.broker_ports(index)
        log = self.logs_dir / f"{name}.log"
        self._spawn(name, [sys.executable, str(PROXY_SCRIPT),
                           "--listen-port", str(ports.proxy),
                           "--target-port", str(ports.proxied),
                           "--control-port", str(ports.proxy_control)], log)
        self._wait(f"{name} start", lambda: _proxy_command(ports.proxy_control, "status"),
                   timeout, log, name=name)
        return self.proxied_bootstrap

    def stop_proxy(self, index: int = 0) -> None:
        self._stop(self.proxy_name(index), timeout=10)

    def proxy_command(self, command: str, index: Optional[int] = None) -> Dict[str, Any]:
        """Sends `command` to broker `index`'s proxy, or to every running one with None (the
        reply of the first)."""
        if index is not None or not self.multi:
            return _proxy_command(self.broker_ports(index or 0).proxy_control, command)
        replies = [_proxy_command(self.broker_ports(i).proxy_control, command)
                   for i in range(self.brokers) if self.is_running(self.proxy_name(i))]
        if not replies:
            raise HarnessError("no proxy is running")
        return replies[0]

    def proxy_status(self, index: Optional[int] = None) -> Dict[str, Any]:
        return self.proxy_command("status", index)

    def proxy_forward(self, index: Optional[int] = None) -> Dict[str, Any]:
        return self.proxy_command("forward", index)

    def proxy_blackhole(self, index: Optional[int] = None) -> Dict[str, Any]:
        """Stop forwarding on every proxied connection, closing none (a silent partition)."""
        return self.proxy_command("blackhole", index)

    def proxy_resume(self, index: Optional[int] = None) -> Dict[str, Any]:
        """End a blackhole: the held bytes flow on the old connections."""
        return self.proxy_command("resume", index)

    def proxy_dead(self, index: Optional[int] = None) -> Dict[str, Any]:
        """Old connections stay silent forever; new ones forward."""
        return self.proxy_command("dead", index)

    # ---- TLS material

    def _ensure_tls(self) -> None:
        d = self.tls_dir
        needed = [d / n for n in ("ca.pem", "broker.p12", "truststore.p12", "truststore.jks",
                                  "client-sasl-ssl.properties")]
        if all(p.exists() for p in needed):
            return
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        openssl = shutil.which("openssl")
        keytool = str(Path(_java()).resolve().parent / "keytool")
        if not os.path.exists(keytool):
            keytool = shutil.which("keytool") or "keytool"
        if not openssl:
            raise HarnessError("openssl not found (apt-get install -y openssl)")

        def sh(*cmd):
            p = _run([str(c) for c in cmd], timeout=120, what=str(cmd[0]))
            if p.returncode != 0:
                raise HarnessError(f"{shlex.join(map(str, cmd))} failed:\n{p.stdout}")

        sh(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
           "-keyout", d / "ca.key", "-out", d / "ca.pem", "-subj", "/CN=sharesink-test-ca",
           "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        sh(openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", d / "broker.key",
           "-out", d / "broker.csr", "-subj", "/CN=127.0.0.1")
        (d / "broker.ext").write_text(
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
            "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n")
        sh(openssl, "x509", "-req", "-in", d / "broker.csr", "-CA", d / "ca.pem",
           "-CAkey", d / "ca.key", "-CAcreateserial", "-out", d / "broker.pem", "-days", "3650",
           "-sha256", "-extfile", d / "broker.ext")
        sh(openssl, "pkcs12", "-export", "-in", d / "broker.pem", "-inkey", d / "broker.key",
           "-certfile", d / "ca.pem", "-name", "broker", "-out", d / "broker.p12",
           "-passout", f"pass:{TLS_PASSWORD}")
        for store, typ in (("truststore.p12", "PKCS12"), ("truststore.jks", "JKS")):
            sh(keytool, "-importcert", "-noprompt", "-alias", "sharesink-test-ca",
               "-file", d / "ca.pem", "-keystore", d / store, "-storetype", typ,
               "-storepass", TLS_PASSWORD)
        _write_atomic(d / "client-sasl-ssl.properties",
                      _props({k: v for k, v in self.sasl_ssl_client_config().items()
                              if k != "bootstrap.servers"}))

    # ---- Connect workers

    def _plugin_path_dir(self) -> Path:
        return self.state_dir / "plugins"

    def _prepare_plugins(self, plugin_archive: Union[str, Path, None, bool], index: int) -> Optional[Path]:
        pp = self._plugin_path_dir()
        pp.mkdir(parents=True, exist_ok=True)
        for name in THIRD_PARTY_PLUGINS:
            src = ensure_plugin(name)
            link = pp / name
            if link.is_symlink() and Path(os.readlink(link)) == src:
                continue
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.exists():
                shutil.rmtree(link)
            link.symlink_to(src, target_is_directory=True)
        self._prepare_test_sinks(pp)
        if plugin_archive is None:
            plugin_archive = default_plugin_archive()
            if plugin_archive is None:
                raise HarnessError(
                    "no sharesink plugin archive: run the Maven build first "
                    f"(`mvn -q package` in {REPO_ROOT}) to produce "
                    "java/target/sharesink-<version>-plugin.zip, or pass plugin_archive=False to "
                    "start the worker without sharesink")
        archive = Path(plugin_archive) if plugin_archive else None
        if archive is not None and not archive.is_file():
            raise HarnessError(f"sharesink plugin archive {archive} does not exist")
        ident = None
        if archive is not None:
            st = archive.stat()
            ident = f"{archive.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        dest = pp / "sharesink"
        stamp = pp / ".sharesink-archive"
        current = stamp.read_text() if stamp.exists() else None
        if dest.is_dir() and current == (ident or ""):
            return archive
        others = [i for i in range(len(OFF_WORKERS)) if i != index and self.is_running(f"worker-{i}")]
        if others:
            raise HarnessError(f"worker(s) {others} run with another sharesink archive "
                               f"({current!r}); stop them before switching to {archive}")
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        if archive is not None:
            with zipfile.ZipFile(archive) as zf:
                for n in zf.namelist():
                    if n.startswith("/") or ".." in Path(n).parts:
                        raise HarnessError(f"unsafe path in {archive}: {n}")
                zf.extractall(dest)
        stamp.write_text(ident or "")
        return archive

    def _prepare_test_sinks(self, pp: Path) -> None:
        """Links each test sink's plugin directory (ensure_test_sink) into the plugin path."""
        for name in TEST_SINKS:
            src = ensure_test_sink(name)
            link = pp / name
            if link.is_symlink() and Path(os.readlink(link)) == src:
                continue
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.exists():
                shutil.rmtree(link)
            link.symlink_to(src, target_is_directory=True)

    def worker_properties(self, index: int, discovery: str = "hybrid_warn",
                          extra: Optional[Mapping[str, Any]] = None,
                          sharesink: bool = True) -> Path:
        """worker-<index>.properties; `extra` keys override (None drops a key, e.g.
        rest.extension.classes); `sharesink`: the plugin is installed, so its REST extension is
        enabled."""
        port = self.worker_port(index)
        props: Dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": "sharesink-connect",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
            "offset.storage.topic": "connect-offsets",
            "offset.storage.replication.factor": self.replication,
            "offset.storage.partitions": 5,
            "config.storage.topic": "connect-configs",
            "config.storage.replication.factor": self.replication,
            "status.storage.topic": "connect-status",
            "status.storage.replication.factor": self.replication,
            "status.storage.partitions": 5,
            "offset.flush.interval.ms": 10000,
            "listeners": f"http://127.0.0.1:{port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": port,
            "rest.advertised.listener": "http",
            "plugin.path": self._plugin_path_dir(),
            "plugin.discovery": discovery,
            "scheduled.rebalance.max.delay.ms": 10000,
        }
        if sharesink:
            props["rest.extension.classes"] = SHARE_MODE_REST_EXTENSION
        for k, v in (extra or {}).items():
            props[k] = v
        path = self.state_dir / "config" / f"worker-{index}.properties"
        _write_atomic(path, _props(props))
        return path

    def start_worker(self, index: int = 0, plugin_archive: Union[str, Path, None, bool] = None,
                     discovery: str = "hybrid_warn", extra: Optional[Mapping[str, Any]] = None,
                     timeout: float = 180, jvm_opts: Sequence[str] = (),
                     env: Optional[Mapping[str, str]] = None, classpath: Sequence[Path] = (),
                     rest_headers: Optional[Mapping[str, str]] = None) -> str:
        """Start Connect worker `index` (0 or 1) in distributed mode; returns its REST URL.

        plugin_archive: the sharesink plugin zip (default: newest java/target/sharesink-*-plugin.zip;
        False: no sharesink, an empty plugin dir). extra: worker properties added/overridden.
        jvm_opts: extra JVM options (e.g. -Dsharesink.native.library=...); env: extra
        environment variables for the worker process; classpath: directories whose jars go on
        the worker's class path after Kafka's (ensure_basic_auth_extension()); rest_headers: sent
        by the readiness check (Authorization for a worker with basic auth)."""
        name = f"worker-{index}"
        url = self.worker_url(index)
        if self.is_running(name):
            raise HarnessError(f"{name} is already running at {url}")
        if not self.broker_running():
            raise HarnessError("start the broker before a worker")
        self._check_port_free(self.worker_port(index), name)
        _ = self.kafka_lib
        archive = self._prepare_plugins(plugin_archive, index)
        props = self.worker_properties(index, discovery, extra, sharesink=archive is not None)
        log4j2 = self.state_dir / "config" / "worker-log4j2.xml"
        _write_atomic(log4j2, WORKER_LOG4J2)
        log = self.logs_dir / f"{name}.log"
        heap = os.environ.get("SHARESINK_WORKER_HEAP", "1g")
        cmd = self.java_cmd(CONNECT_DISTRIBUTED, [props], heap=heap, log4j2=log4j2, jvm_opts=[
            "-Xms256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            f"-Dkafka.logs.dir={self.logs_dir}", f"-Dsharesink.cluster={name}"] + list(jvm_opts),
            classpath=classpath)
        self._spawn(name, cmd, log, env=dict(os.environ, **env) if env else None)
        rest = self.rest(index, rest_headers)

        def ready():
            root = rest.get("/", timeout=5)
            if not isinstance(root, dict) or "version" not in root:
                return False
            plugins = rest.get("/connector-plugins", timeout=10)
            if not isinstance(plugins, list) or not plugins:
                return False
            rest.get("/connectors", timeout=10)
            return True

        self._wait(f"{name} REST at {url}", ready, timeout, log, name=name, interval=0.5)
        self._write_env()
        return url

    def stop_worker(self, index: int = 0, timeout: float = 60) -> None:
        self._stop(f"worker-{index}", timeout=timeout)

    def kill_worker(self, index: int = 0) -> None:
        self._stop(f"worker-{index}", kill=True)

    # ---- PostgreSQL

    def _pg_bindir(self) -> Path:
        if self._pg_bin is not None:
            return self._pg_bin
        cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                       key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
        if not cands:
            self._install_postgres()
            cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
            if not cands:
                raise HarnessError("postgresql installed but no /usr/lib/postgresql/*/bin/postgres")
        self._pg_bin = Path(cands[-1]).parent
        return self._pg_bin

    def _install_postgres(self) -> None:
        if os.geteuid() != 0:
            raise HarnessError("PostgreSQL is missing and installing it needs root: "
                               "apt-get install -y postgresql")
        with _file_lock(Path("/tmp/sharesink-apt.lock")):
            if glob.glob("/usr/lib/postgresql/*/bin/postgres"):
                return
            _log("installing PostgreSQL from Debian packages (apt-get install -y postgresql)")
            env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
            # No default cluster: the harness runs its own server in its state dir.
            conf = Path("/etc/postgresql-common/createcluster.conf")
            if not conf.exists():
                conf.parent.mkdir(parents=True, exist_ok=True)
                conf.write_text("create_main_cluster = false\n")
            policy = _run(["apt-cache", "policy", "postgresql"], timeout=60, env=env)
            if "Candidate: (none)" in policy.stdout or "Candidate:" not in policy.stdout:
                upd = _run(["apt-get", "update"], timeout=600, env=env, what="apt-get update")
                if upd.returncode != 0:
                    raise HarnessError(f"apt-get update failed:\n{upd.stdout[-3000:]}")
            inst = _run(["apt-get", "install", "-y", "--no-install-recommends",
                         "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
                         "postgresql"],
                        timeout=900, env=env, what="apt-get install postgresql")
            if inst.returncode != 0:
                raise HarnessError(f"apt-get install postgresql failed:\n{inst.stdout[-3000:]}")

    def _pg_dirs(self):
        data = self.state_dir / "pgdata"
        sock = self.state_dir / "pg-run"
        if len(str(sock)) > 80:  # unix socket paths are limited to 107 bytes
            sock = Path(tempfile.gettempdir()) / f"sharesink-pg-{self.postgres_port}"
        return data, sock

    def postgres_info(self) -> Dict[str, Any]:
        port = self.postgres_port
        return {
            "host": "127.0.0.1", "port": port, "db": PG_DB, "user": PG_USER,
            "password": PG_PASSWORD,
            "jdbc_url": f"jdbc:postgresql://127.0.0.1:{port}/{PG_DB}",
            "url": f"postgresql://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{port}/{PG_DB}",
        }

    def _as_postgres(self, cmd: Sequence[str], timeout: float = 60, input: Optional[str] = None):
        full = ["runuser", "-u", "postgres", "--"] + [str(c) for c in cmd]
        return subprocess.run(full, input=input, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout, cwd="/")

    def psql(self, sql: str, db: str = "postgres", check: bool = True) -> str:
        """Run SQL as the postgres superuser over the local socket; returns psql's output."""
        _, sock = self._pg_dirs()
        p = self._as_postgres([self._pg_bindir() / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
                               "-h", sock, "-p", self.postgres_port, "-d", db, "-At", "-f", "-"],
                              input=sql)
        if check and p.returncode != 0:
            raise HarnessError(f"psql failed: {p.stdout}")
        return p.stdout

    def start_postgres(self, timeout: float = 60) -> Dict[str, Any]:
        if self.is_running("postgres"):
            return self.postgres_info()
        bindir = self._pg_bindir()
        data, sock = self._pg_dirs()
        self._check_port_free(self.postgres_port, "postgres")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for parent in [self.state_dir] + list(self.state_dir.parents):
            mode = parent.stat().st_mode
            if not mode & 0o001:
                raise HarnessError(f"{parent} is not searchable by the postgres user; "
                                   "choose a SHARESINK_CLUSTER_DIR outside it")
        log = self.logs_dir / "postgres.log"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        sock.mkdir(parents=True, exist_ok=True)
        shutil.chown(sock, "postgres", "postgres")
        if not (data / "PG_VERSION").exists():
            shutil.rmtree(data, ignore_errors=True)
            data.mkdir(parents=True)
            shutil.chown(data, "postgres", "postgres")
            os.chmod(data, 0o700)
            p = self._as_postgres([bindir / "initdb", "-D", data, "-U", "postgres", "-E", "UTF8",
                                   "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256"],
                                  timeout=180)
            with open(log, "a") as f:
                f.write(p.stdout)
            if p.returncode != 0:
                shutil.rmtree(data, ignore_errors=True)
                raise HarnessError(f"initdb failed; see {log}:\n{p.stdout[-3000:]}")
            with open(data / "pg_hba.conf", "w") as f:
                f.write("local all all trust\n"
                        "host all all 127.0.0.1/32 scram-sha-256\n")
        # stale pid file after a crash: postgres refuses to start only if the PID is alive
        cmd = [bindir / "postgres", "-D", data, "-p", self.postgres_port,
               "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={sock}",
               "-c", "max_connections=200", "-c", "fsync=off", "-c", "synchronous_commit=off",
               "-c", "full_page_writes=off", "-c", "logging_collector=off"]
        # SIGINT = PostgreSQL's fast shutdown (SIGTERM would wait for clients to disconnect)
        self._spawn("postgres", [str(c) for c in cmd], log, stop_signal=signal.SIGINT,
                    user="postgres", group="postgres", extra_groups=[])

        def ready():
            p = subprocess.run([str(bindir / "pg_isready"), "-q", "-U", "postgres", "-h", str(sock), "-p",
                                str(self.postgres_port)], timeout=10)
            return p.returncode == 0

        self._wait("postgres start", ready, timeout, log, name="postgres")
        self.psql(f"""
SELECT 'CREATE ROLE {PG_USER} LOGIN PASSWORD ''{PG_PASSWORD}'''
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{PG_USER}') \\gexec
SELECT 'CREATE DATABASE {PG_DB} OWNER {PG_USER}'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{PG_DB}') \\gexec
""")
        self._write_env()
        return self.postgres_info()

    def stop_postgres(self, timeout: float = 30) -> None:
        self._stop("postgres", timeout=timeout)

    def pg_stop_for(self, seconds: float, background: bool = False) -> Optional[threading.Thread]:
        """Stop PostgreSQL, keep it down for `seconds`, start it again (data kept)."""
        def outage():
            self.stop_postgres()
            time.sleep(seconds)
            self.start_postgres()
        if not background:
            outage()
            return None
        t = threading.Thread(target=outage, name="pg-outage", daemon=True)
        t.start()
        return t

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

    def create_topic(self, name: str, partitions: int = 1,
                     config: Optional[Mapping[str, Any]] = None) -> None:
        args = ["--bootstrap-server", self.bootstrap, "--create", "--if-not-exists",
                "--topic", name, "--partitions", partitions, "--replication-factor",
                self.replication]
        for k, v in (config or {}).items():
            args += ["--config", f"{k}={v}"]
        self.run_tool(TOPIC_COMMAND, *args)

    def delete_topic(self, name: str) -> None:
        self.run_tool(TOPIC_COMMAND, "--bootstrap-server", self.bootstrap, "--delete",
                      "--if-exists", "--topic", name)

    def list_topics(self) -> List[str]:
        out = self.run_tool(TOPIC_COMMAND, "--bootstrap-server", self.bootstrap, "--list").stdout
        return [l.strip() for l in out.splitlines() if l.strip()]

    @staticmethod
    def _config_arg(cfg: Mapping[str, Any]) -> str:
        items = []
        for k, v in cfg.items():
            v = str(v).lower() if isinstance(v, bool) else str(v)
            if "," in v and not v.startswith("["):
                v = f"[{v}]"
            items.append(f"{k}={v}")
        return ",".join(items)

    def set_group_config(self, group: str, config: Mapping[str, Any]) -> None:
        self.run_tool(CONFIG_COMMAND, "--bootstrap-server", self.bootstrap, "--alter",
                      "--entity-type", "groups", "--entity-name", group,
                      "--add-config", self._config_arg(config))

    def delete_group_config(self, group: str, keys: Iterable[str]) -> None:
        self.run_tool(CONFIG_COMMAND, "--bootstrap-server", self.bootstrap, "--alter",
                      "--entity-type", "groups", "--entity-name", group,
                      "--delete-config", ",".join(keys))

    def describe_configs(self, entity_type: str, name: str, all: bool = True) -> Dict[str, str]:
        """Effective configs of a group/topic/broker as {key: value}."""
        args = ["--bootstrap-server", self.bootstrap, "--describe", "--entity-type", entity_type,
                "--entity-name", name]
        if all:
            args.append("--all")
        out = self.run_tool(CONFIG_COMMAND, *args).stdout
        res = {}
        for line in out.splitlines():
            line = line.strip()
            if "=" not in line or line.startswith(("All configs", "Dynamic configs")):
                continue
            kv = line.split(" sensitive=")[0]
            k, _, v = kv.partition("=")
            res[k] = v
        return res

    def set_broker_config(self, config: Mapping[str, Any]) -> None:
        """Dynamic cluster-wide broker config (e.g. errors.deadletterqueue.*)."""
        self.run_tool(CONFIG_COMMAND, "--bootstrap-server", self.bootstrap, "--alter",
                      "--entity-type", "brokers", "--entity-default",
                      "--add-config", self._config_arg(config))

    def produce(self, topic: str, values: Union[int, Iterable[Union[str, bytes, None]]],
                keys: Optional[Iterable[Union[str, bytes, None]]] = None,
                headers: Optional[Iterable[Optional[Mapping[str, str]]]] = None, *,
                record_size: int = 100, producer_props: Optional[Mapping[str, Any]] = None,
                timeout: float = 600) -> int:
        """Produce records; returns how many.

        `values` as a list of strings: exactly those records, in order, through the console
        producer (no newlines in keys, values or headers; None = null value/key). `values` as
        an int N: N generated records of `record_size` bytes, through the producer perf tool
        (1e6 records take seconds)."""
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

    # ---- env file, status, up/down

    def _write_env(self) -> None:
        env = {
            "SHARESINK_CLUSTER_DIR": str(self.state_dir),
            "SHARESINK_PORT_BASE": str(self.port_base),
            "BOOTSTRAP": self.bootstrap,
            "PROXIED_BOOTSTRAP": self.proxied_bootstrap,
            "PROXY_CONTROL_PORT": str(self.proxy_control_port),
            "PROXY_CONTROL_PORTS": ",".join(str(self.broker_ports(i).proxy_control)
                                            for i in range(self.brokers)),
            "BROKERS": str(self.brokers),
            "CONNECT_URL": self.worker_url(0),
            "CONNECT_URL_0": self.worker_url(0),
            "CONNECT_URL_1": self.worker_url(1),
            "KAFKA_LIB": str(self.kafka_lib),
            "KAFKA_CLASSPATH": self.classpath,
            "JAVA": _java(),
            "LOGS_DIR": str(self.logs_dir),
            "PLUGIN_PATH": str(self._plugin_path_dir()),
        }
        if self.sasl_ssl:
            env.update({
                "SASL_SSL_BOOTSTRAP": self.sasl_ssl_bootstrap,
                "SCRAM_USER": SCRAM_USER, "SCRAM_PASSWORD": SCRAM_PASSWORD,
                "CA_PEM": str(self.ca_pem), "TRUSTSTORE_P12": str(self.truststore_p12),
                "TRUSTSTORE_JKS": str(self.truststore_jks), "TRUSTSTORE_PASSWORD": TLS_PASSWORD,
                "SASL_SSL_CLIENT_PROPERTIES": str(self.sasl_ssl_client_properties),
            })
        pg = self.postgres_info()
        env.update({"PG_HOST": pg["host"], "PG_PORT": str(pg["port"]), "PG_DB": PG_DB,
                    "PG_USER": PG_USER, "PG_PASSWORD": PG_PASSWORD, "PG_JDBC_URL": pg["jdbc_url"]})
        text = "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())
        _write_atomic(self.state_dir / "env", text)

    def components(self) -> List[str]:
        names = [n for i in range(self.brokers) for n in (self.broker_name(i), self.proxy_name(i))]
        names += [f"worker-{i}" for i in range(len(OFF_WORKERS))] + ["postgres"]
        extra = sorted(p.stem for p in self.pids_dir.glob("*.pid")) if self.pids_dir.exists() else []
        return names + [n for n in extra if n not in names]

    def status(self) -> Dict[str, Any]:
        res = {}
        for n in self.components():
            info = self._recorded(n)
            if info or n in self._popen:
                res[n] = {"pid": (info or {}).get("pid"), "running": self.is_running(n)}
        return res

    def down(self) -> None:
        """Stop every process this state dir recorded (workers first, then broker, postgres)."""
        order = [f"worker-{i}" for i in range(len(OFF_WORKERS))]
        order += [n for i in range(self.brokers) for n in (self.broker_name(i), self.proxy_name(i))]
        order += ["postgres"]
        order += [n for n in self.components() if n not in order]
        errors = []
        brokers = [n for n in order if n == "broker" or n.startswith("broker-")]
        with contextlib.suppress(HarnessError):
            self._stop_together([n for n in order if n.startswith("worker-")], timeout=60)
        with contextlib.suppress(HarnessError):
            self._stop_together(brokers, timeout=30)
        for n in order:
            try:
                self._stop(n, timeout=60)
            except HarnessError as e:
                errors.append(str(e))
        if errors:
            raise HarnessError("; ".join(errors))

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
                self._broker_meta_path().unlink()
        self.start_broker(sasl_ssl=sasl_ssl)
        for i in range(workers):
            self.start_worker(i, plugin_archive=plugin_archive, discovery=discovery)
        if postgres:
            self.start_postgres()
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
