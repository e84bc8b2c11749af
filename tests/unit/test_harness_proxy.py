"""The blackhole proxy's fault model (tests/harness/proxy.py), which scenario 13 and the engine's
blackhole tests rely on, checked against a local echo server: no broker needed.

During a blackhole nothing flows; on resume the held bytes of old connections flow, a connection
made during the blackhole and still open connects upstream with what its client sent, and one its
client closed meanwhile never reaches upstream (in a real partition its SYN never got through).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from typing import List

from harness.cluster import REPO_ROOT
from harness.proxy import command


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Echo(threading.Thread):
    """Echoes every connection; `received` is what reached it, in arrival order."""

    def __init__(self):
        super().__init__(daemon=True)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: List[bytes] = []

    def run(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        with conn:
            while data := conn.recv(65536):
                self.received.append(data)
                conn.sendall(data)


def test_a_connection_closed_during_a_blackhole_never_reaches_upstream():
    echo = _Echo()
    echo.start()
    listen, control = _free_port(), _free_port()
    proxy = subprocess.Popen([sys.executable, str(REPO_ROOT / "tests" / "harness" / "proxy.py"),
                              "--listen-port", str(listen), "--target-port", str(echo.port),
                              "--control-port", str(control)], stdout=subprocess.PIPE, text=True)
    try:
        proxy.stdout.readline()  # listening
        old = socket.create_connection(("127.0.0.1", listen), timeout=5)
        old.sendall(b"before")
        assert old.recv(16) == b"before"

        command(control, "blackhole")
        old.sendall(b"held")
        abandoned = socket.create_connection(("127.0.0.1", listen), timeout=5)
        abandoned.sendall(b"stale request")
        abandoned.close()
        live = socket.create_connection(("127.0.0.1", listen), timeout=5)
        live.sendall(b"first")
        time.sleep(0.5)
        assert echo.received == [b"before"], "bytes flowed during the blackhole"

        command(control, "resume")
        assert old.recv(16) == b"held"
        assert live.recv(16) == b"first"
        live.sendall(b"after")
        assert live.recv(16) == b"after"
        time.sleep(0.5)
        assert b"stale request" not in b"".join(echo.received), echo.received
        assert command(control, "status")["accepted"] == 3
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        echo.server.close()
