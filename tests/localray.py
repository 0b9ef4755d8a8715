"""Starting and stopping a private Ray head on loopback, for the tests and the benchmark.

It exists so `tests/jobs` and `bench/` exercise a real Ray cluster
without touching a user's own Ray: every port is a free loopback port and the head's
processes are found and stopped by pid, never by `ray stop` (which kills every Ray
process on the machine by name, scripts.py `stop`, Ray 2.60).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Ray ships psutil in ray/thirdparty_files and puts it on sys.path when imported; the
# project pins Ray, so this is the psutil the `ray` CLI itself uses.
import ray  # noqa: F401  (side effect: makes the vendored psutil importable)

# isort: split
import psutil  # Ray's vendored copy, importable once `ray` is imported

from jobs.client.net import dashboard_answers

# Ray 2.60 needs about 12 s to start on a 2-core machine (reference §4.3); leave room for CI.
START_TIMEOUT_S = 120.0


# The GCS marks a raylet dead after missed health checks (Ray's defaults: 5 checks up to 10 s
# apart): tests that kill a GPU raylet as a spot reclaim shorten that to a few seconds. Each check
# may take 3 s to answer: with 1 s, a raylet on a machine busy with other suites (load 20) missed
# three in a row and was declared dead while alive.
FAST_HEALTH = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "3000",
    "RAY_health_check_failure_threshold": "4",
    "RAY_health_check_initial_delay_ms": "1000",
}


def port_is_free(port: int) -> bool:
    """Whether a socket can bind `port` on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False
    return True


# Loopback ports a test's Ray binds are drawn from here: below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, 32768-60999 by default), so no client socket on the machine is
# handed one as its source port between our choosing it and Ray binding it. A port the OS
# picked (bind to port 0) comes from that range, and CI saw the GCS fail so ("Failed to start
# the grpc server. The specified port is 59655", Ray 2.48.0). Worker ports take 20000-29999.
OWN_PORTS = range(10000, 20000)
WORKER_PORTS = range(20000, 30000)


def ephemeral_port_floor() -> int:
    """The lowest port the kernel hands out as a source port (32768 where /proc does not say)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def distinct_free_ports(n: int) -> list[int]:
    """`n` ports free right now, different from each other and below the ephemeral range: every
    socket stays bound until all are chosen (two draws may otherwise pick the same port, and Ray
    refuses to start when two of its components share one)."""
    held: list[socket.socket] = []
    try:
        for _ in range(200 * n):
            if len(held) == n:
                break
            port = random.choice(OWN_PORTS)
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            held.append(s)
        if len(held) < n:
            raise RuntimeError(f"no {n} free ports found in {OWN_PORTS.start}-{OWN_PORTS.stop - 1}")
        return [int(s.getsockname()[1]) for s in held]
    finally:
        for s in held:
            s.close()


def free_port_range(size: int) -> tuple[int, int]:
    """A run of `size` consecutive free ports, below the kernel's ephemeral range."""
    for _ in range(200):
        start = random.randrange(WORKER_PORTS.start, WORKER_PORTS.stop - size)
        if all(port_is_free(p) for p in range(start, start + size)):
            return start, start + size - 1
    raise RuntimeError(
        f"no {size} consecutive free ports found in {WORKER_PORTS.start}-{WORKER_PORTS.stop - 1}"
    )


def venv_bin() -> Path:
    """The bin directory of the interpreter running us (holds `ray` and `python`)."""
    return Path(sys.executable).parent


def terminate(procs: list[psutil.Process], root: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM every process, SIGKILL what is left after `grace_s`, then reap the root."""
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    try:
        root.wait(timeout=5)
    except subprocess.TimeoutExpired:
        root.kill()


@dataclass
class LocalRay:
    """A running private head: its dashboard URL and what is needed to stop it."""

    dashboard_url: str
    temp_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    pids: set[int] = field(default_factory=set)
    # The head node's Prometheus export (`--metrics-export-port`): Ray's and user metrics.
    metrics_url: str = ""

    def stop(self, grace_s: float = 4.0) -> None:
        """Stop every process of this head: the `ray start --block` tree plus any process
        whose command line names our temp dir (workers re-parent to init when raylet dies)."""
        terminate(_our_processes(self.process.pid, self.temp_dir), self.process, grace_s)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        self.log_path.unlink(missing_ok=True)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def start_logs(self) -> str:
        """All `ray start` printed and every component's own log of this head's sessions: a
        component that could not bind its port says so in its own file (gcs_server.out,
        raylet.err, ...), while `ray start` may print only that it exited."""
        files = [self.log_path, *sorted(self.temp_dir.glob("session_2*/logs/*"))]
        texts = []
        for path in files:
            try:
                texts.append(path.read_text(errors="replace"))
            except OSError:
                continue
        return "\n".join(texts)


def _our_processes(root_pid: int, temp_dir: Path) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    try:
        root = psutil.Process(root_pid)
        found[root.pid] = root
        for child in root.children(recursive=True):
            found[child.pid] = child
    except psutil.Error:
        pass
    marker = str(temp_dir)
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in (p.info["cmdline"] or [])):
                found[p.pid] = p
        except psutil.Error:
            continue
    found.pop(os.getpid(), None)
    return list(found.values())


# What Ray's own AutoscalingCluster sets for its fake multi-node provider and autoscaler v2
# (ray/cluster_utils.py, Ray 2.60): the head's node id must be the provider's fixed head id.
FAKE_AUTOSCALER_ENV = {
    "RAY_FAKE_CLUSTER": "1",
    "AUTOSCALER_UPDATE_INTERVAL_S": "1",
    "RAY_enable_autoscaler_v2": "1",
    "RAY_CLOUD_INSTANCE_ID": "fffffffffffffffffffffffffffffffffffffffffffffffffff00000",
    "RAY_OVERRIDE_NODE_ID_FOR_TESTING": "fffffffffffffffffffffffffffffffffffffffffffffffffff00000",
}


def _autoscaling_file(config: dict[str, Any], temp_dir: Path, gcs_port: int) -> Path:
    """The config with the provider pointed at this head's GCS (the fake provider's default,
    port 6379, would join another test's cluster)."""
    config = json.loads(json.dumps(config))
    config["provider"]["gcs_address"] = f"127.0.0.1:{gcs_port}"
    path = temp_dir / "autoscaling.json"
    path.write_text(json.dumps(config))
    return path


class StartRaced(RuntimeError):
    """`ray start` lost a race it cannot win again by waiting: either Ray's own dashboard window
    ran out (Ray polls the GCS for the dashboard's address 200 times 0.1 s apart, then exits:
    services.py `start_api_server`, Ray 2.46.0 and 2.48.0; nine dashboard module processes
    starting on a loaded 2-core machine overrun it), or a port chosen free was bound by another
    process before Ray bound it. Both are timings of this machine, not faults of the code under
    test, and a fresh start on new ports is the answer."""


# What `ray start` prints when that window ran out (services.py, Ray 2.46.0 to 2.60), and when a
# component could not bind its port (grpc_server.cc and Python's socket errors).
_RACE_LOST = (
    "it contains the error message from the dashboard",
    "Failed to start the grpc server",
    "Address already in use",
)


def start_failure(logs: str) -> type[RuntimeError]:
    """StartRaced when a failed head's logs (`LocalRay.start_logs`) show a lost start-up race,
    else RuntimeError (a fault that a second start would only repeat)."""
    return StartRaced if any(sign in logs for sign in _RACE_LOST) else RuntimeError


# How many heads `start` tries when a start-up race was lost (see above).
START_ATTEMPTS = 3


def start(
    num_cpus: int = 2,
    timeout_s: float = START_TIMEOUT_S,
    extra_env: dict[str, str] | None = None,
    autoscaling: dict[str, Any] | None = None,
) -> LocalRay:
    """Start a head on free loopback ports with its own temp dir and wait for its dashboard.
    `extra_env` reaches the head's processes (e.g. RAY_health_check_* for the GCS).
    `autoscaling`: a Ray cluster config for Ray's fake multi-node provider, whose autoscaler
    (v2) then starts and stops worker raylets on this machine (tests/jobs/fake_autoscaler.py).
    A head whose `ray start` lost a start-up race (StartRaced) is started afresh on new ports,
    up to START_ATTEMPTS times; any other failure is raised at once."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            with _one_start_at_a_time(timeout_s):
                return _start_once(num_cpus, timeout_s, extra_env, autoscaling)
        except StartRaced:
            if attempt == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


# Heads start one at a time on this machine: a head's start-up is its most CPU-hungry moment
# (the GCS, a raylet, the dashboard and its nine module processes, each importing Ray), and two
# at once on two cores is what ran Ray 2.46/2.48's fixed dashboard window out.
START_LOCK = Path(tempfile.gettempdir()) / "rl-on-gke-ray-start.lock"


@contextlib.contextmanager
def _one_start_at_a_time(timeout_s: float) -> Iterator[None]:
    """Hold the machine-wide start lock; after `timeout_s` of waiting (a holder that hangs) go on
    without it rather than fail a test on another test's account."""
    with open(START_LOCK, "a") as lock:
        deadline = time.monotonic() + timeout_s
        held = False
        while not held and time.monotonic() < deadline:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:
                time.sleep(0.2)
        try:
            yield
        finally:
            if held:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _start_once(
    num_cpus: int,
    timeout_s: float,
    extra_env: dict[str, str] | None,
    autoscaling: dict[str, Any] | None,
) -> LocalRay:
    # A short path: Ray puts unix sockets under the temp dir and sockets are limited to
    # 107 bytes on Linux.
    temp_dir = Path(tempfile.mkdtemp(prefix="rj-", dir="/tmp"))
    (
        dashboard_port,
        agent_port,
        gcs_port,
        client_port,
        manager_port,
        object_port,
        env_agent_port,
        agent_grpc_port,
        metrics_port,
    ) = distinct_free_ports(9)
    min_worker, max_worker = free_port_range(40)
    args = [
        str(venv_bin() / "ray"),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={gcs_port}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard_port}",
        f"--ray-client-server-port={client_port}",
        f"--node-manager-port={manager_port}",
        f"--object-manager-port={object_port}",
        f"--runtime-env-agent-port={env_agent_port}",
        f"--dashboard-agent-listen-port={agent_port}",
        f"--dashboard-agent-grpc-port={agent_grpc_port}",
        f"--metrics-export-port={metrics_port}",
        f"--min-worker-port={min_worker}",
        f"--max-worker-port={max_worker}",
        f"--num-cpus={num_cpus}",
        f"--temp-dir={temp_dir}",
        "--include-dashboard=true",
        "--disable-usage-stats",
    ]
    env = dict(os.environ)
    if autoscaling is not None:
        args.append(f"--autoscaling-config={_autoscaling_file(autoscaling, temp_dir, gcs_port)}")
        env.update(FAKE_AUTOSCALER_ENV)
    # Job entrypoints run through the head's PATH (reference §4.4): put this venv first so
    # `python` in an entrypoint is an interpreter that has Ray.
    env["PATH"] = f"{venv_bin()}{os.pathsep}{env.get('PATH', '')}"
    env.pop("RAY_ADDRESS", None)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env.update(extra_env or {})
    log_path = temp_dir.parent / f"{temp_dir.name}.start.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    log.close()
    cluster = LocalRay(
        f"http://127.0.0.1:{dashboard_port}",
        temp_dir,
        proc,
        log_path,
        metrics_url=f"http://127.0.0.1:{metrics_port}/metrics",
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail, evidence = cluster.log_tail(), cluster.start_logs()
            cluster.stop()
            raise start_failure(evidence)(f"ray start exited with {proc.returncode}:\n{tail}")
        # The dashboard answers before the head's job agent listens, and a submit in between
        # waits 10 s for it, then fails (job_head.py `submit_job`, Ray 2.60); on a loaded
        # machine that gap is longer, so the head counts as up once both answer.
        if dashboard_answers(cluster.dashboard_url) and _listens(agent_port):
            return cluster
        time.sleep(0.25)
    tail = cluster.log_tail()
    cluster.stop()
    raise RuntimeError(
        f"Ray dashboard and job agent did not answer within {timeout_s:.0f} s:\n{tail}"
    )
