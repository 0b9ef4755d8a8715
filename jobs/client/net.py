"""Small network probes: a free loopback port, and whether a Ray dashboard answers."""

from __future__ import annotations

import http.client
import socket


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dashboard_answers(url: str, timeout: float = 2.0) -> bool:
    """True when `GET <url>/api/version` returns 200 within `timeout` seconds."""
    # Through jobs_api's http.client: urllib.request would add ~0.07 s of imports to every
    # command for this one probe.
    from jobs.client.api import JobsAPI

    try:
        JobsAPI(url, timeout_s=timeout).get_version()
    except (OSError, ValueError, RuntimeError, http.client.HTTPException):
        return False
    return True
