"""The blackhole proxy in front of each broker's PROXIED listener (the proxy itself is
``proxy.py``, run as its own process): start, stop, and switch it between forwarding and a silent
partition."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional

from harness.broker import BrokerLayout
from harness.common import HARNESS_DIR, HarnessError
from harness.procs import Processes
from harness.proxy import command as _proxy_command
from harness.waits import BOUND_S

PROXY_SCRIPT = HARNESS_DIR / "proxy.py"


class Proxies:
    """Each broker's blackhole proxy: a service object over the brokers' `layout` (ports and
    names, ``broker.BrokerLayout``), its processes run through `procs` (``Processes``), logging to
    ``logs_dir/<name>.log``."""

    def __init__(self, layout: BrokerLayout, logs_dir: Path, procs: Processes):
        self.layout = layout
        self.logs_dir = logs_dir
        self._procs = procs

    def start(self, index: int = 0, timeout: float = BOUND_S) -> str:
        """Start broker `index`'s proxy (started with the broker); returns the proxied
        bootstrap."""
        name = self.layout.proxy_name(index)
        if self._procs.is_running(name):
            return self.layout.proxied_bootstrap
        ports = self.layout.ports(index)
        log = self.logs_dir / f"{name}.log"
        self._procs.spawn(name, [sys.executable, str(PROXY_SCRIPT),
                                 "--listen-port", str(ports.proxy),
                                 "--target-port", str(ports.proxied),
                                 "--control-port", str(ports.proxy_control)], log)
        self._procs.wait(f"{name} start", lambda: _proxy_command(ports.proxy_control, "status"),
                         timeout, log, name=name)
        return self.layout.proxied_bootstrap

    def stop(self, index: int = 0) -> None:
        self._procs.stop(self.layout.proxy_name(index), timeout=10)

    def command(self, command: str, index: Optional[int] = None) -> Dict[str, Any]:
        """Sends `command` to broker `index`'s proxy, or to every running one with None (the
        reply of the first)."""
        layout = self.layout
        if index is not None or not layout.multi:
            return _proxy_command(layout.ports(index or 0).proxy_control, command)
        replies = [_proxy_command(layout.ports(i).proxy_control, command)
                   for i in range(layout.count) if self._procs.is_running(layout.proxy_name(i))]
        if not replies:
            raise HarnessError("no proxy is running")
        return replies[0]

    def status(self, index: Optional[int] = None) -> Dict[str, Any]:
        return self.command("status", index)

    def forward(self, index: Optional[int] = None) -> Dict[str, Any]:
        return self.command("forward", index)

    def blackhole(self, index: Optional[int] = None) -> Dict[str, Any]:
        """Stop forwarding on every proxied connection, closing none (a silent partition)."""
        return self.command("blackhole", index)

    def resume(self, index: Optional[int] = None) -> Dict[str, Any]:
        """End a blackhole: the held bytes flow on the old connections."""
        return self.command("resume", index)

    def dead(self, index: Optional[int] = None) -> Dict[str, Any]:
        """Old connections stay silent forever; new ones forward."""
        return self.command("dead", index)
