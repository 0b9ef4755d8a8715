"""Small network probes: a free loopback port, and whether a Ray dashboard answers."""

from __future__ import annotations

import socket
import urllib.request


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dashboard_answers(url: str, timeout: float = 2.0) -> bool:
    """True when `GET <url>/api/version` returns 200 within `timeout` seconds."""
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=timeout) as r:
            return r.status == 200
    except (OSError, ValueError):
        return False
