"""PostgreSQL for the JDBC sink tests: Debian's server binaries (installed when missing),
running as the postgres user on a data dir in the state dir."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from harness.common import HarnessError, _file_lock, _log, _run
from harness.procs import Processes
from harness.waits import BOUND_S

PG_DB = "sharesink"
PG_USER = "sharesink"
PG_PASSWORD = "sharesink"
# Its port's offset from SHARESINK_PORT_BASE.
OFF_POSTGRES = 32


class PostgresServer:
    """The cluster's PostgreSQL, a service that owns its state, as Kafka's system tests' services
    do: its port, its data and socket directories, its server binaries. Its process runs through
    the cluster's ``Processes`` (``procs``: spawn, wait, stop, pid files), and ``on_started`` tells
    the cluster its address is up (the cluster rewrites its env file)."""

    def __init__(self, state_dir: Path, logs_dir: Path, port: int, procs: Processes,
                 on_started: Callable[[], None]):
        self.state_dir = state_dir
        self.logs_dir = logs_dir
        self.port = port
        self._procs = procs
        self._on_started = on_started
        self._bin: Optional[Path] = None

    def bindir(self) -> Path:
        """The directory of Debian's server binaries, installed when missing."""
        if self._bin is not None:
            return self._bin
        cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                       key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
        if not cands:
            self._install_postgres()
            cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
            if not cands:
                raise HarnessError("postgresql installed but no /usr/lib/postgresql/*/bin/postgres")
        self._bin = Path(cands[-1]).parent
        return self._bin

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

    def dirs(self) -> Tuple[Path, Path]:
        """Its data directory and its socket directory."""
        data = self.state_dir / "pgdata"
        sock = self.state_dir / "pg-run"
        if len(str(sock)) > 80:  # unix socket paths are limited to 107 bytes
            sock = Path(tempfile.gettempdir()) / f"sharesink-pg-{self.port}"
        return data, sock

    def info(self) -> Dict[str, Any]:
        port = self.port
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
        _, sock = self.dirs()
        p = self._as_postgres([self.bindir() / "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
                               "-h", sock, "-p", self.port, "-d", db, "-At", "-f", "-"],
                              input=sql)
        if check and p.returncode != 0:
            raise HarnessError(f"psql failed: {p.stdout}")
        return p.stdout

    def start(self, timeout: float = BOUND_S) -> Dict[str, Any]:
        if self._procs.is_running("postgres"):
            return self.info()
        bindir = self.bindir()
        data, sock = self.dirs()
        self._procs.check_port_free(self.port, "postgres")
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
        cmd = [bindir / "postgres", "-D", data, "-p", self.port,
               "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={sock}",
               "-c", "max_connections=200", "-c", "fsync=off", "-c", "synchronous_commit=off",
               "-c", "full_page_writes=off", "-c", "logging_collector=off"]
        # SIGINT = PostgreSQL's fast shutdown (SIGTERM would wait for clients to disconnect)
        self._procs.spawn("postgres", [str(c) for c in cmd], log, stop_signal=signal.SIGINT,
                           user="postgres", group="postgres", extra_groups=[])

        def ready():
            p = subprocess.run([str(bindir / "pg_isready"), "-q", "-U", "postgres", "-h", str(sock), "-p",
                                str(self.port)], timeout=10)
            return p.returncode == 0

        self._procs.wait("postgres start", ready, timeout, log, name="postgres")
        self.psql(f"""
SELECT 'CREATE ROLE {PG_USER} LOGIN PASSWORD ''{PG_PASSWORD}'''
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{PG_USER}') \\gexec
SELECT 'CREATE DATABASE {PG_DB} OWNER {PG_USER}'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '{PG_DB}') \\gexec
""")
        self._on_started()
        return self.info()

    def stop(self, timeout: float = 30) -> None:
        self._procs.stop("postgres", timeout=timeout)

    def stop_for(self, seconds: float, background: bool = False) -> Optional[threading.Thread]:
        """Stop PostgreSQL, keep it down for `seconds`, start it again (data kept)."""
        def outage():
            self.stop()
            time.sleep(seconds)
            self.start()
        if not background:
            outage()
            return None
        t = threading.Thread(target=outage, name="pg-outage", daemon=True)
        t.start()
        return t
