"""Jar and plugin resolution (Maven Central -> ~/.m2 -> ~/.cache/sharesink): the Kafka release's
jars, the third-party Connect plugins, the tests' own sinks, the JMX exporter agent, Connect's
basic-auth REST extension, and the sharesink plugin archive to install."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

from harness.common import (HARNESS_DIR, REPO_ROOT, HarnessError, _file_lock, _java, _log, _run,
                            _write_atomic)

KAFKA_DEPS_POM = HARNESS_DIR / "kafka-deps" / "pom.xml"

# The Kafka release of broker, tools and worker: 4.4.0, or an older 4.2.x / 4.3.x for the
# version matrix (SHARESINK_KAFKA_VERSION; `scripts/test.sh --kafka 4.3.1`).
KAFKA_VERSION = os.environ.get("SHARESINK_KAFKA_VERSION", "4.4.0")


def _version(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


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


def ensure_kafka_lib(version: str = KAFKA_VERSION) -> Path:
    """The directory with every jar of the broker, tools and Connect runtime of Kafka `version`
    (default the harness's, SHARESINK_KAFKA_VERSION), resolved once."""
    root = cache_dir() / f"kafka-{version}"
    lib = root / "lib"
    marker = root / ".complete"
    key = hashlib.sha256(KAFKA_DEPS_POM.read_bytes()).hexdigest()
    if _marker_ok(marker, key) and lib.is_dir():
        return lib
    with _file_lock(cache_dir() / ".lock"):
        if _marker_ok(marker, key) and lib.is_dir():
            return lib
        _log(f"resolving Kafka {version} jars into {lib} (Maven Central, cached in ~/.m2)")
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="lib.", dir=root))
        proc = _mvn(["dependency:copy-dependencies", f"-DoutputDirectory={tmp}",
                     "-DincludeScope=runtime", f"-Dkafka.version={version}"],
                    what="resolving Kafka jars")
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise HarnessError(f"mvn dependency:copy-dependencies failed:\n{proc.stdout[-4000:]}")
        jars = sorted(p.name for p in tmp.glob("*.jar"))
        needed = [f"kafka_2.13-{version}.jar", f"kafka-tools-{version}.jar",
                  f"connect-runtime-{version}.jar", "log4j-slf4j2-impl-"]
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


@contextlib.contextmanager
def _staged_dir(base: Path, name: str, target: Path) -> Iterator[Path]:
    """A fresh directory beside `target` to fill: when the block ends without error it replaces
    `target` whole (readers never see half an install); on any error it is removed."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=base))
    try:
        yield tmp
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


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
        chosen = None
        with _staged_dir(base, name, target) as tmp:
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
        with _staged_dir(base, dir_name, target) as tmp:
            chosen = next((v for v in BASIC_AUTH_VERSIONS if _copy_artifact(
                f"org.apache.kafka:connect-basic-auth-extension:{v}", tmp)), None)
            if chosen is None:
                raise HarnessError("no version of connect-basic-auth-extension resolves")
            if _version(KAFKA_VERSION) >= (4, 4) > _version(chosen):
                _build_appinfo_shim(tmp)
            if chosen != BASIC_AUTH_VERSIONS[0]:
                _log(f"connect-basic-auth-extension: using {chosen} (preferred version not served)")
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

# Third-party sinks of the compatibility matrix (tests/e2e/sink_matrix.py), each plugin directory
# resolved from Maven Central with its runtime dependencies (less what the worker provides:
# org.apache.kafka and SLF4J) through a generated pom. Only the matrix's workers have them on their
# plugin path (start_worker(extra_plugins=...)): every worker start scans its plugin path.
#
# Each entry: artifacts as (group, artifact, [versions to try, preferred first], type/classifier
# suffix or ""); the first combination that resolves is used, the versions chosen are recorded.
# Served here (checked 2026-12 with Maven's version ranges): no Apache Camel Kafka Connector of the
# 4.x line (nor 0.x per-component connectors), only its core camel-kafka-connector 0.11.0 (Camel
# 3.11.1, the generic CamelSinkConnector, configured with camel.sink.url), with Camel 3.11.1's
# components; not jaredpetersen's, jcustenborder's or Redis Inc.'s Redis sinks, nor Aiven's.
# One Camel directory holds every component: the generic connector class is one class name, and
# Connect resolves one class name to one plugin directory.
MAVEN_PLUGINS = {
    "camel-0.11": [
        ("org.apache.camel.kafkaconnector", "camel-kafka-connector", ["0.11.0"], ""),
        ("org.apache.camel", "camel-paho", ["3.11.1"], ""),
        ("org.apache.camel", "camel-paho-mqtt5", ["3.11.1"], ""),
        ("org.apache.camel", "camel-nats", ["3.11.1"], ""),
        ("org.apache.camel", "camel-http", ["3.11.1"], ""),
        ("org.apache.camel", "camel-sql", ["3.11.1"], ""),
        ("org.mariadb.jdbc", "mariadb-java-client", ["3.5.6", "3.5.3", "3.4.1"], ""),
    ],
    "rabbitmq-jcustenborder": [
        ("com.github.jcustenborder.kafka.connect", "kafka-connect-rabbitmq", ["0.0.2.16"], ""),
    ],
    # Validation only (no MongoDB server in Debian): the connector's own -all jar.
    "mongodb": [
        ("org.mongodb.kafka", "mongo-kafka-connect", ["2.0.1"], "jar:all"),
    ],
}
MAVEN_PLUGINS_EXCLUDED_GROUPS = ("org.apache.kafka", "org.slf4j")


def _plugin_pom(artifacts: Sequence[tuple]) -> str:
    deps = []
    for group, artifact, version, suffix in artifacts:
        kind, _, classifier = suffix.partition(":")
        deps.append(
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>"
            + (f"<type>{kind}</type>" if kind else "")
            + (f"<classifier>{classifier}</classifier>" if classifier else "")
            + ("<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
               "</exclusion></exclusions>" if classifier == "all" else "")
            + "</dependency>")
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>sharesink.harness</groupId><artifactId>plugin</artifactId><version>1</version>"
            "<dependencies>" + "".join(deps) + "</dependencies></project>\n")


def ensure_maven_plugin(name: str) -> Path:
    """Own plugin directory of matrix plugin `name` (MAVEN_PLUGINS): its jars and their runtime
    dependencies, resolved once into the cache."""
    if name not in MAVEN_PLUGINS:
        raise HarnessError(f"unknown matrix plugin {name!r}")
    base = cache_dir() / "plugins"
    target = base / name
    marker = base / f".{name}.complete"
    key = json.dumps(MAVEN_PLUGINS[name]) + "|" + ",".join(MAVEN_PLUGINS_EXCLUDED_GROUPS)
    if _marker_ok(marker, key) and target.is_dir():
        return target
    with _file_lock(cache_dir() / ".lock"):
        if _marker_ok(marker, key) and target.is_dir():
            return target
        base.mkdir(parents=True, exist_ok=True)
        chosen = []
        with _staged_dir(base, name, target) as tmp:
            work = Path(tempfile.mkdtemp(prefix=f".{name}.pom.", dir=base))
            try:
                # One artifact at a time picks its version (the first served), then all together.
                for group, artifact, versions, suffix in MAVEN_PLUGINS[name]:
                    for v in versions:
                        (work / "pom.xml").write_text(_plugin_pom([(group, artifact, v, suffix)]))
                        proc = _run([shutil.which("mvn") or "mvn", "-q", "-B", "-f",
                                     str(work / "pom.xml"), "dependency:resolve"],
                                    timeout=900, what=f"resolving {group}:{artifact}:{v}")
                        if proc.returncode == 0:
                            chosen.append((group, artifact, v, suffix))
                            break
                    else:
                        raise HarnessError(f"plugin {name}: no version of {group}:{artifact} "
                                           f"({versions}) resolves from Maven Central")
                (work / "pom.xml").write_text(_plugin_pom(chosen))
                proc = _run([shutil.which("mvn") or "mvn", "-q", "-B", "-f", str(work / "pom.xml"),
                             "dependency:copy-dependencies", f"-DoutputDirectory={tmp}",
                             "-DincludeScope=runtime",
                             "-DexcludeGroupIds=" + ",".join(MAVEN_PLUGINS_EXCLUDED_GROUPS)],
                            timeout=1200, what=f"resolving plugin {name}")
                if proc.returncode != 0 or not any(tmp.glob("*.jar")):
                    raise HarnessError(f"resolving plugin {name} failed:\n{proc.stdout[-4000:]}")
            finally:
                shutil.rmtree(work, ignore_errors=True)
        versions = {f"{g}:{a}": v for g, a, v, _ in chosen}
        for (g, a, vs, _), v in zip(MAVEN_PLUGINS[name], versions.values()):
            if v != vs[0]:
                _log(f"plugin {name}: {g}:{a} {v} (preferred {vs[0]} not served)")
        _write_atomic(marker, json.dumps({"key": key, "versions": versions}))
        return target


def maven_plugin_versions(name: str) -> Dict[str, str]:
    """{group:artifact: version} that ensure_maven_plugin resolved for `name` ({} before)."""
    try:
        return json.loads((cache_dir() / "plugins" / f".{name}.complete").read_text())["versions"]
    except (OSError, ValueError, KeyError):
        return {}


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
