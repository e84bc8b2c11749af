"""The blackhole proxy in front of each broker's PROXIED listener (the proxy itself is
``proxy.py``, run as its own process): start, stop, and switch it between forwarding and a silent
partition."""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional

from harness.common import HARNESS_DIR, HarnessError
from harness.proxy import command as _proxy_command
from harness.waits import BOUND_S

PROXY_SCRIPT = HARNESS_DIR / "proxy.py"


class ProxyControl:
    """Each broker's blackhole proxy (a part of ``Cluster``: uses its broker ports and names,
    ``proxied_bootstrap`` and its processes)."""

    def start_proxy(self, index: int = 0, timeout: float = BOUND_S) -> str:
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
