"""Kafka Connect workers in distributed mode, with their plugin path, and a small client of
their REST API."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from harness import costs
from harness.artifacts import (TEST_SINKS, THIRD_PARTY_PLUGINS, default_plugin_archive,
                               ensure_maven_plugin, ensure_plugin, ensure_test_sink)
from harness.common import REPO_ROOT, HarnessError, _log4j2, _props, _write_atomic
from harness.procs import Processes
from harness.tools import KafkaTools
from harness.waits import BOUND_S, Budget

# Main classes of Kafka 4.4.0 (checked with `unzip -l` on the resolved jars).
CONNECT_DISTRIBUTED = "org.apache.kafka.connect.cli.ConnectDistributed"

# Workers 0 and 1: their REST listeners' offsets from SHARESINK_PORT_BASE.
OFF_WORKERS = (83, 84)

# sharesink's REST extension (the KIP's switch, consumer.override.group.protocol=share), enabled
# on every worker that has the sharesink plugin; a worker without it could not load the class.
SHARE_MODE_REST_EXTENSION = "io.sharesink.connect.rest.ShareModeRestExtension"

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
        `timeout` machine seconds have passed (a rebalance takes longer on a loaded machine:
        harness/waits.py's Budget)."""
        budget = Budget(timeout)
        while True:
            try:
                return fn()
            except RestError as e:
                if retriable(e) and not budget.spent():
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

    @costs.timed_method(costs.CONNECTORS)
    def put_connector(self, name: str, config: Mapping[str, Any]) -> dict:
        cfg = {k: str(v) if not isinstance(v, str) else v for k, v in config.items()}
        q = urllib.parse.quote(name, safe="")
        return self._retry_busy(lambda: self.put(f"/connectors/{q}/config", cfg))

    @costs.timed_method(costs.CONNECTORS)
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

    @costs.timed_method(costs.CONNECTORS)
    def wait_connector_running(self, name: str, tasks: Optional[int] = None,
                               timeout: float = 60) -> dict:
        """Wait until the connector and its tasks (exactly `tasks` of them if given, else at
        least one) are RUNNING; a FAILED connector or task fails at once with its trace. The
        `timeout` counts machine seconds (harness/waits.py's Budget)."""
        budget = Budget(timeout)
        last: Any = None
        while not budget.spent():
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
        raise HarnessError(f"connector {name} not RUNNING (tasks={tasks}) within "
                           f"{budget.describe()}; "
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


def _link_plugin_dir(link: Path, src: Path) -> None:
    """Makes `link` in the plugin path a symlink to the plugin directory `src`, replacing
    whatever stood there (a link elsewhere, a file, a directory)."""
    if link.is_symlink() and Path(os.readlink(link)) == src:
        return
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    link.symlink_to(src, target_is_directory=True)


class ConnectWorkers:
    """Connect workers 0 and 1: a service object that owns their ports (from `port_base`), their
    plugin path under ``state_dir`` and their config files. They join the brokers at `bootstrap`
    with internal topics of `replication` replicas; their processes run through `procs`
    (``Processes``) on the command lines of `tools` (``KafkaTools``); a worker starts only while
    `broker_running()`, and `on_started` tells the cluster it is up (the env file)."""

    def __init__(self, state_dir: Path, logs_dir: Path, port_base: int, bootstrap: str,
                 replication: int, procs: Processes, tools: KafkaTools,
                 broker_running: Callable[[], bool], on_started: Callable[[], None]):
        self.state_dir = state_dir
        self.logs_dir = logs_dir
        self.port_base = port_base
        self.bootstrap = bootstrap
        self.replication = replication
        self._procs = procs
        self._tools = tools
        self._broker_running = broker_running
        self._on_started = on_started

    def port(self, index: int) -> int:
        if index < 0 or index >= len(OFF_WORKERS):
            raise HarnessError(f"worker index {index} out of range (0..{len(OFF_WORKERS) - 1})")
        return self.port_base + OFF_WORKERS[index]

    def url(self, index: int = 0) -> str:
        return f"http://127.0.0.1:{self.port(index)}"

    def rest(self, index: int = 0, headers: Optional[Mapping[str, str]] = None) -> Rest:
        return Rest(self.url(index), self.logs_dir / f"worker-{index}.log", headers)

    def plugin_path_dir(self) -> Path:
        return self.state_dir / "plugins"

    def _extra_plugin_path_dir(self) -> Path:
        return self.state_dir / "plugins-extra"

    def _prepare_extra_plugins(self, names: Sequence[str]) -> Optional[Path]:
        """The second plugin.path entry: links to exactly the matrix plugins `names`
        (artifacts.MAVEN_PLUGINS), or None when there are none."""
        if not names:
            return None
        extra = self._extra_plugin_path_dir()
        extra.mkdir(parents=True, exist_ok=True)
        for link in extra.iterdir():
            if link.name not in names:
                link.unlink() if link.is_symlink() or link.is_file() else shutil.rmtree(link)
        for name in names:
            _link_plugin_dir(extra / name, ensure_maven_plugin(name))
        return extra

    def _prepare_plugins(self, plugin_archive: Union[str, Path, None, bool], index: int) -> Optional[Path]:
        pp = self.plugin_path_dir()
        pp.mkdir(parents=True, exist_ok=True)
        for name in THIRD_PARTY_PLUGINS:
            _link_plugin_dir(pp / name, ensure_plugin(name))
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
        others = [i for i in range(len(OFF_WORKERS))
                  if i != index and self._procs.is_running(f"worker-{i}")]
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
            _link_plugin_dir(pp / name, ensure_test_sink(name))

    def properties(self, index: int, discovery: str = "hybrid_warn",
                   extra: Optional[Mapping[str, Any]] = None,
                   sharesink: bool = True, extra_plugin_dir: Optional[Path] = None) -> Path:
        """worker-<index>.properties; `extra` keys override (None drops a key, e.g.
        rest.extension.classes); `sharesink`: the plugin is installed, so its REST extension is
        enabled."""
        port = self.port(index)
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
            "plugin.path": ",".join(str(d) for d in (self.plugin_path_dir(), extra_plugin_dir)
                                    if d is not None),
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

    def start(self, index: int = 0, plugin_archive: Union[str, Path, None, bool] = None,
              discovery: Optional[str] = None, extra: Optional[Mapping[str, Any]] = None,
              timeout: float = BOUND_S, jvm_opts: Sequence[str] = (),
              env: Optional[Mapping[str, str]] = None, classpath: Sequence[Path] = (),
              rest_headers: Optional[Mapping[str, str]] = None,
              extra_plugins: Sequence[str] = ()) -> str:
        """Start Connect worker `index` (0 or 1) in distributed mode; returns its REST URL.

        plugin_archive: the sharesink plugin zip (default: newest java/target/sharesink-*-plugin.zip;
        False: no sharesink, an empty plugin dir). extra: worker properties added/overridden.
        jvm_opts: extra JVM options (e.g. -Dsharesink.native.library=...); env: extra
        environment variables for the worker process; classpath: directories whose jars go on
        the worker's class path after Kafka's (ensure_basic_auth_extension()); rest_headers: sent
        by the readiness check (Authorization for a worker with basic auth); extra_plugins: matrix
        plugins (artifacts.MAVEN_PLUGINS) on a second plugin.path entry, for this worker only.

        discovery: `plugin.discovery`. By default `service_load` when every plugin on the path
        has its ServiceLoader manifests (sharesink, connect-file, Debezium's JDBC sink, Iceberg,
        the test sinks: Connect 4.4 itself says so, "consider reconfiguring"), which finds
        the same plugins as the operators' `hybrid_warn` without its reflection scan (20 s and
        more of every start on a loaded machine); `hybrid_warn` with matrix plugins, some of
        which have none (Camel 0.11, MongoDB 2.0.1). test_plugin_loading.py starts workers with
        each mode on purpose."""
        if discovery is None:
            discovery = "hybrid_warn" if extra_plugins else "service_load"
        name = f"worker-{index}"
        url = self.url(index)
        if self._procs.is_running(name):
            raise HarnessError(f"{name} is already running at {url}")
        if not self._broker_running():
            raise HarnessError("start the broker before a worker")
        self._procs.check_port_free(self.port(index), name)
        _ = self._tools.kafka_lib
        archive = self._prepare_plugins(plugin_archive, index)
        extra_dir = self._prepare_extra_plugins(extra_plugins)
        props = self.properties(index, discovery, extra, sharesink=archive is not None,
                                extra_plugin_dir=extra_dir)
        log4j2 = self.state_dir / "config" / "worker-log4j2.xml"
        _write_atomic(log4j2, WORKER_LOG4J2)
        log = self.logs_dir / f"{name}.log"
        heap = os.environ.get("SHARESINK_WORKER_HEAP", "1g")
        archive_opts, archive_at_exit = self._tools.class_archive_opts("worker", classpath)
        cmd = self._tools.java_cmd(CONNECT_DISTRIBUTED, [props], heap=heap, log4j2=log4j2, jvm_opts=[
            "-Xms256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            f"-Dkafka.logs.dir={self.logs_dir}", f"-Dsharesink.cluster={name}"]
            + archive_opts + list(jvm_opts), classpath=classpath)
        self._procs.spawn(name, cmd, log, env=dict(os.environ, **env) if env else None,
                          class_archive=archive_at_exit)
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

        self._procs.wait(f"{name} REST at {url}", ready, timeout, log, name=name, interval=0.5)
        self._on_started()
        return url

    def stop(self, index: int = 0, timeout: float = 60) -> None:
        self._procs.stop(f"worker-{index}", timeout=timeout)

    def kill(self, index: int = 0) -> None:
        self._procs.stop(f"worker-{index}", kill=True)
