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
from typing import Any, Dict, Optional, Sequence

from harness.common import HarnessError, _file_lock, _log, _run
from harness.waits import BOUND_S

PG_DB = "sharesink"
PG_USER = "sharesink"
PG_PASSWORD = "sharesink"
# Its port's offset from SHARESINK_PORT_BASE.
OFF_POSTGRES = 32


class Postgres:
    """The cluster's PostgreSQL (a part of ``Cluster``: uses its ``state_dir``, ``logs_dir``,
    ``postgres_port``, ``_pg_bin`` and its processes)."""

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

    def start_postgres(self, timeout: float = BOUND_S) -> Dict[str, Any]:
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
