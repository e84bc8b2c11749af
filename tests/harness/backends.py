"""The sink compatibility matrix's backends (tests/e2e/test_sink_matrix.py): Mosquitto (MQTT),
MariaDB and the NATS server, each from Debian's packages (installed when missing, never started
by the package: the harness runs its own server in the state dir), listening on 127.0.0.1 only.

Like PostgreSQL (postgres.py), they are a service object that owns its state (``MatrixBackends``,
``Cluster.backends``: ports, data dirs, sockets), its processes run through the cluster's
``Processes``. ``restart(name, down_s)`` stops one and starts it again with its data, for the
"backend restart mid-stream" of the matrix.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

from harness.common import HarnessError, _file_lock, _log, _port_open, _run
from harness.procs import Processes

# Their ports' offsets from SHARESINK_PORT_BASE.
OFF_MOSQUITTO = 40
OFF_MARIADB = 41
OFF_NATS = 42
# The HTTP server a matrix test runs itself (tests/e2e/sink_matrix.py), as an HTTP sink's target.
OFF_HTTP_TARGET = 43

MARIADB_DB = "sharesink"
MARIADB_USER = "sharesink"
MARIADB_PASSWORD = "sharesink"

# Debian package -> a file it installs (present = installed).
PACKAGES = {
    "mosquitto": "/usr/sbin/mosquitto",
    "mosquitto-clients": "/usr/bin/mosquitto_sub",
    "mariadb-server": "/usr/sbin/mariadbd",
    "mariadb-client": "/usr/bin/mariadb",
    "nats-server": "/usr/sbin/nats-server",
}

# While the packages install, no service of theirs may start (it would listen on every address,
# on the default ports): Debian's maintainer scripts ask invoke-rc.d, which obeys policy-rc.d.
_POLICY_RC_D = Path("/usr/sbin/policy-rc.d")


def apt_install(packages: Sequence[str]) -> None:
    """Installs the Debian packages of `packages` that are missing, without starting services."""
    missing = [p for p in packages if not Path(PACKAGES[p]).exists()]
    if not missing:
        return
    if os.geteuid() != 0:
        raise HarnessError(f"{missing} are missing and installing them needs root: "
                           f"apt-get install -y {' '.join(missing)}")
    with _file_lock(Path("/tmp/sharesink-apt.lock")):
        missing = [p for p in packages if not Path(PACKAGES[p]).exists()]
        if not missing:
            return
        _log(f"installing {missing} from Debian packages (services not started)")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        policy = _run(["apt-cache", "policy"] + missing, timeout=60, env=env)
        if "Candidate: (none)" in policy.stdout or policy.stdout.count("Candidate:") < len(missing):
            upd = _run(["apt-get", "update"], timeout=600, env=env, what="apt-get update")
            if upd.returncode != 0:
                raise HarnessError(f"apt-get update failed:\n{upd.stdout[-3000:]}")
        had_policy = _POLICY_RC_D.exists()
        if not had_policy:
            _POLICY_RC_D.write_text("#!/bin/sh\n# sharesink harness: no service starts while it "
                                    "installs packages\nexit 101\n")
            _POLICY_RC_D.chmod(0o755)
        try:
            inst = _run(["apt-get", "install", "-y", "--no-install-recommends",
                         "-o", "Dpkg::Options::=--force-confdef",
                         "-o", "Dpkg::Options::=--force-confold"] + missing,
                        timeout=900, env=env, what=f"apt-get install {missing}")
        finally:
            if not had_policy:
                with contextlib.suppress(FileNotFoundError):
                    _POLICY_RC_D.unlink()
        if inst.returncode != 0:
            raise HarnessError(f"apt-get install {missing} failed:\n{inst.stdout[-3000:]}")


class MatrixBackends:
    """Mosquitto, MariaDB and NATS of the sink matrix: their ports (from `port_base`), their data
    under `state_dir`, their logs in `logs_dir`, their processes run through `procs`
    (``Processes``)."""

    def __init__(self, state_dir: Path, logs_dir: Path, port_base: int, procs: Processes):
        self.state_dir = state_dir
        self.logs_dir = logs_dir
        self.port_base = port_base
        self._procs = procs

    # ---- ports and addresses

    @property
    def mosquitto_port(self) -> int:
        return self.port_base + OFF_MOSQUITTO

    @property
    def mariadb_port(self) -> int:
        return self.port_base + OFF_MARIADB

    @property
    def nats_port(self) -> int:
        return self.port_base + OFF_NATS

    @property
    def http_target_port(self) -> int:
        return self.port_base + OFF_HTTP_TARGET

    def mariadb_info(self) -> Dict[str, object]:
        port = self.mariadb_port
        return {"host": "127.0.0.1", "port": port, "db": MARIADB_DB, "user": MARIADB_USER,
                "password": MARIADB_PASSWORD,
                "jdbc_url": f"jdbc:mariadb://127.0.0.1:{port}/{MARIADB_DB}",
                "mysql_jdbc_url": f"jdbc:mysql://127.0.0.1:{port}/{MARIADB_DB}"}

    # ---- Mosquitto

    def start_mosquitto(self, timeout: float = 30) -> int:
        """Mosquitto on 127.0.0.1:<base+40>, anonymous, with persistence (queued QoS 1 messages
        of persistent sessions survive a restart); returns its port."""
        if self._procs.is_running("mosquitto"):
            return self.mosquitto_port
        apt_install(["mosquitto", "mosquitto-clients"])
        self._procs.check_port_free(self.mosquitto_port, "mosquitto")
        data = self.state_dir / "mosquitto"
        data.mkdir(parents=True, exist_ok=True)
        conf = data / "mosquitto.conf"
        conf.write_text(
            f"listener {self.mosquitto_port} 127.0.0.1\n"
            "allow_anonymous true\n"
            "user root\n"
            "persistence true\n"
            f"persistence_location {data}/\n"
            "autosave_interval 1\n"
            "max_queued_messages 0\n"
            "log_dest stdout\n"
            "log_type error\nlog_type warning\nlog_type notice\n")
        log = self.logs_dir / "mosquitto.log"
        self._procs.spawn("mosquitto", ["/usr/sbin/mosquitto", "-c", str(conf)], log)
        self._procs.wait("mosquitto start", lambda: _port_open(self.mosquitto_port), timeout, log,
                         name="mosquitto")
        return self.mosquitto_port

    def stop_mosquitto(self) -> None:
        self._procs.stop("mosquitto", timeout=30)

    # ---- NATS

    def start_nats(self, timeout: float = 30) -> int:
        """The NATS server on 127.0.0.1:<base+42> (no monitoring port), with JetStream storing under
        `state_dir` (what a stream captured survives a restart); returns its port."""
        if self._procs.is_running("nats"):
            return self.nats_port
        apt_install(["nats-server"])
        self._procs.check_port_free(self.nats_port, "nats")
        log = self.logs_dir / "nats.log"
        store = self.state_dir / "nats"
        store.mkdir(parents=True, exist_ok=True)
        self._procs.spawn("nats", ["/usr/sbin/nats-server", "-a", "127.0.0.1", "-p",
                                   str(self.nats_port), "-js", "-sd", str(store)], log)
        self._procs.wait("nats start", lambda: _port_open(self.nats_port), timeout, log, name="nats")
        return self.nats_port

    def stop_nats(self) -> None:
        self._procs.stop("nats", timeout=30)

    # ---- MariaDB

    def _mariadb_socket(self) -> Path:
        sock = self.state_dir / "mariadb-run" / "mysqld.sock"
        if len(str(sock)) > 100:
            sock = Path("/tmp") / f"sharesink-mariadb-{self.mariadb_port}" / "mysqld.sock"
        return sock

    def mariadb_sql(self, sql: str, db: Optional[str] = MARIADB_DB, check: bool = True) -> str:
        """Runs SQL as MariaDB's root over the local socket; tab-separated rows, no header."""
        cmd = ["/usr/bin/mariadb", "--no-defaults", "-uroot", f"--socket={self._mariadb_socket()}",
               "-N", "-B"] + ([db] if db else [])
        p = subprocess.run(cmd, input=sql, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        if check and p.returncode != 0:
            raise HarnessError(f"mariadb failed: {p.stdout}")
        return p.stdout

    def start_mariadb(self, timeout: float = 90) -> Dict[str, object]:
        """MariaDB on 127.0.0.1:<base+41> with database and user ``sharesink``."""
        if self._procs.is_running("mariadb"):
            return self.mariadb_info()
        apt_install(["mariadb-server", "mariadb-client"])
        self._procs.check_port_free(self.mariadb_port, "mariadb")
        data = self.state_dir / "mariadb"
        sock = self._mariadb_socket()
        sock.parent.mkdir(parents=True, exist_ok=True)
        log = self.logs_dir / "mariadb.log"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        fresh = not (data / "mysql").is_dir()
        if fresh:
            shutil.rmtree(data, ignore_errors=True)
            data.mkdir(parents=True)
            p = _run(["/usr/bin/mariadb-install-db", "--no-defaults", f"--datadir={data}",
                      "--user=root", "--auth-root-authentication-method=socket",
                      "--skip-test-db"], timeout=300, what="mariadb-install-db")
            with open(log, "a") as f:
                f.write(p.stdout)
            if p.returncode != 0:
                shutil.rmtree(data, ignore_errors=True)
                raise HarnessError(f"mariadb-install-db failed; see {log}:\n{p.stdout[-3000:]}")
        cmd = ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}", "--user=root",
               f"--socket={sock}", f"--port={self.mariadb_port}", "--bind-address=127.0.0.1",
               f"--pid-file={sock.parent / 'mariadbd.pid'}", "--skip-name-resolve",
               "--max-connections=300", "--innodb-buffer-pool-size=64M",
               "--innodb-flush-log-at-trx-commit=2", "--skip-log-bin"]
        self._procs.spawn("mariadb", cmd, log)
        self._procs.wait("mariadb start", lambda: _port_open(self.mariadb_port)
                         and self.mariadb_sql("SELECT 1", db=None, check=False).strip() == "1",
                         timeout, log, name="mariadb")
        if fresh:
            self.mariadb_sql(
                f"CREATE DATABASE IF NOT EXISTS {MARIADB_DB};"
                f"CREATE USER IF NOT EXISTS '{MARIADB_USER}'@'127.0.0.1' "
                f"IDENTIFIED BY '{MARIADB_PASSWORD}';"
                f"GRANT ALL ON {MARIADB_DB}.* TO '{MARIADB_USER}'@'127.0.0.1';", db=None)
        return self.mariadb_info()

    def stop_mariadb(self) -> None:
        self._procs.stop("mariadb", timeout=60)

    # ---- restarts

    def restart(self, name: str, down_s: float = 5) -> None:
        """Stops backend `name` (mosquitto, mariadb, nats) gracefully, keeps it down `down_s`
        seconds, starts it again with its data."""
        stop = {"mosquitto": self.stop_mosquitto, "mariadb": self.stop_mariadb,
                "nats": self.stop_nats}[name]
        start = {"mosquitto": self.start_mosquitto, "mariadb": self.start_mariadb,
                 "nats": self.start_nats}[name]
        stop()
        time.sleep(down_s)
        start()

