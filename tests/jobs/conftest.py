"""Fixtures for the jobs tests: one real loopback Ray head per session, a CLI runner, a proxy."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ray.job_submission import JobSubmissionClient

from components.stack_outputs import StackOutputs
from jobs.client.net import free_port
from tests import localray

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def ray_head() -> Iterator[localray.LocalRay]:
    head = localray.start(num_cpus=2)
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture(scope="session")
def ray_url(ray_head: localray.LocalRay) -> str:
    return ray_head.dashboard_url


@pytest.fixture(scope="session")
def ray_client(ray_url: str) -> JobSubmissionClient:
    return JobSubmissionClient(ray_url)


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without a cluster address or debug output, the venv's bin first on PATH
    as an activated venv has it: the CLI's hints then say `python -m jobs` as typed."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "JOBS_DEBUG")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """`python -m jobs ...` as a real process, so exit codes and stderr are the real ones."""
    return subprocess.run(
        [sys.executable, "-m", "jobs", *args],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def as_in_a_terminal() -> None:
    """`preexec_fn` for a CLI a test interrupts as a person would with Ctrl-C: SIGINT at its
    default, so Python turns it into KeyboardInterrupt. A shell without job control starts
    background commands with SIGINT and SIGQUIT ignored (`nohup make test &`), the ignore is
    inherited through exec, and such a CLI would never see the test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def wait_until(predicate: Callable[[], bool], timeout: float = 60, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purpose.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Proxy:
    """A loopback TCP proxy to the dashboard that a test can cut and restore, standing in for a
    port-forward or a network path that drops while a command is watching a job."""

    def __init__(self, target_url: str) -> None:
        host, port = target_url.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self.start()

    def start(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(32)
        # A timeout so the accept loop notices stop(): close() does not wake accept() on Linux.
        server.settimeout(0.2)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server: socket.socket) -> None:
        while self._server is server:
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    def stop(self) -> None:
        """Refuse new connections and cut every open one (the dashboard is gone)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _pump(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def stack_outputs(**fields: object) -> StackOutputs:
    """A stack's outputs as `pulumi stack output --json` gives them (camelCase), with the fields
    every stack has filled in; `fields` sets or overrides any of them."""
    required: dict[str, object] = {
        "clusterName": "c",
        "clusterLocation": "l",
        "clusterProject": "p",
        "rayClusterName": "rc",
        "rayNamespace": "ray",
        "rayHeadService": "rc-head-svc",
        "rayDashboardPort": 8265,
        "rayFramework": "verl",
        "gpuNodeCount": 2,
        "gpusPerNode": 8,
    }
    return StackOutputs(**{**required, **fields})
