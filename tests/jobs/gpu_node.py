"""A second local raylet that advertises GPUs, standing in for a GPU node that a test can take
away and bring back (a reclaimed spot node and its replacement)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import ray  # noqa: F401  (makes Ray's vendored psutil importable)

# isort: split
import psutil  # Ray's vendored copy, importable once `ray` is imported

from tests import localray


def gcs_address(head: localray.LocalRay) -> str:
    port = next(a.split("=", 1)[1] for a in head.process.args if str(a).startswith("--port="))
    return f"127.0.0.1:{port}"


# Each fake GPU node has a loopback address of its own, as each GPU VM has its own IP; 127.0.0.1
# is the head's (Ray advertises the machine's IP for it). On one IP a driver on the head can
# attach to a GPU node's raylet: Ray 2.46/2.48 take the first alive raylet on the driver's IP
# (GlobalStateAccessor::GetNodeToConnectForDriver; 2.60 prefers the head). Under 2.48.0 the head's
# job agent did so, and when that node was killed the GCS marked the agent's job finished
# (GcsJobManager::OnNodeDead) and dropped the classes it had exported: every later JobSupervisor
# died loading its class ("Expected str or bytes, got NoneType").
_node_numbers = itertools.count()


def loopback_ip(number: int) -> str:
    n = number % (250 * 250)
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


# Ray 2.46/2.48 keep a node's IP in the session dir, which every node on a machine shares
# (a worker node's --temp-dir is ignored: scripts.py `ray start`), and a driver takes its IP from
# there (services.py get_cached_node_ip_address / write_node_ip_address, last writer wins). After
# a GPU node has written its own, the head's is put back: a driver on the head (the head's only
# drivers) must read the head's IP, as on a machine of its own, or it exports its metrics to an
# agent at the GPU node's address. A driver that read it in between finds no raylet of that IP
# yet and takes the head's (the same function's fallback). Ray 2.60 keeps no such file.
NODE_IP_FILE = "node_ip_address.json"


def _cached_ip_file(head: localray.LocalRay) -> Path | None:
    found = sorted(head.temp_dir.glob(f"session_2*/{NODE_IP_FILE}"))
    return found[-1] if found else None


def _read_cached_ip(path: Path) -> str | None:
    try:
        return json.loads(path.read_text() or "{}").get("node_ip_address")
    except (OSError, ValueError):
        return None


def restore_head_ip(
    path: Path, head_ip: str, node_ip: str, process: subprocess.Popen[bytes], timeout: float = 60
) -> None:
    """Wait until the GPU node's `ray start` has written `node_ip` to the shared session file,
    then write `head_ip` back, under the lock Ray takes for that file."""
    from filelock import FileLock  # Ray's own dependency, for its own lock on this file

    deadline = time.monotonic() + timeout
    while _read_cached_ip(path) != node_ip:
        if process.poll() is not None or time.monotonic() > deadline:
            return  # it never wrote it: nothing to put back
        time.sleep(0.05)
    with FileLock(str(path.absolute()) + ".lock"):
        path.write_text(json.dumps({"node_ip_address": head_ip}))


# How many times `GpuNode.join` starts a raylet whose `ray start` gave up joining.
JOIN_ATTEMPTS = 3


def _session(sid: int) -> list[psutil.Process]:
    """Every process of session `sid` (the raylet's `ray start` is started as a session leader)."""
    found = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) == sid:
                found.append(psutil.Process(pid))
        except (OSError, psutil.Error):
            continue
    return found


class GpuNode:
    """`ray start --address <head> --num-gpus N --block` on loopback ports, stopped by pid."""

    def __init__(self, head: localray.LocalRay, gpus: int = 2) -> None:
        self.head = head
        self.gpus = gpus
        self.process: subprocess.Popen[bytes] | None = None
        self.ip = loopback_ip(next(_node_numbers))
        self.log = Path(f"{head.temp_dir}.gpu-node.log")

    def start(self) -> None:
        lo, hi = localray.free_port_range(20)
        ports = localray.distinct_free_ports(6)
        args = [
            str(localray.venv_bin() / "ray"),
            "start",
            f"--address={gcs_address(self.head)}",
            "--block",
            f"--node-ip-address={self.ip}",
            f"--num-gpus={self.gpus}",
            "--num-cpus=0",
            f"--node-manager-port={ports[0]}",
            f"--object-manager-port={ports[1]}",
            f"--runtime-env-agent-port={ports[2]}",
            f"--dashboard-agent-listen-port={ports[3]}",
            f"--dashboard-agent-grpc-port={ports[4]}",
            f"--metrics-export-port={ports[5]}",
            f"--min-worker-port={lo}",
            f"--max-worker-port={hi}",
            "--disable-usage-stats",
        ]
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        ip_file = _cached_ip_file(self.head)
        head_ip = _read_cached_ip(ip_file) if ip_file else None
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        if ip_file and head_ip:
            restore_head_ip(ip_file, head_ip, self.ip, self.process)

    def join(self, timeout: float = 90) -> None:
        """Start the raylet and wait until the cluster counts its GPUs. A `ray start` that gave up
        joining is started again (up to JOIN_ATTEMPTS): on a loaded machine the new node's first
        GCS read can pass its deadline, or its raylet its start-up window, and `ray start` then
        exits ("Failed to get node info b'RPC error: Deadline Exceeded'" or "The current node
        timed out during startup", node.py, Ray 2.60), which is a timing of this machine."""
        deadline = time.monotonic() + timeout
        self.start()
        starts = 1
        while True:
            try:
                wait_gpus(self.head.dashboard_url, self.gpus, timeout=2.0)
                # Its own raylet: a killed node not yet declared dead can count the same GPUs.
                if self.ip in alive_raylet_ips(self.head.dashboard_url):
                    return
                time.sleep(0.5)
            except (AssertionError, OSError, ValueError):
                pass
            assert self.process is not None
            if self.process.poll() is not None and starts < JOIN_ATTEMPTS:
                self.stop()
                self.start()
                starts += 1
            if time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
                raise AssertionError(
                    f"cluster did not report {self.gpus} GPUs within {timeout:.0f} s "
                    f"({starts} start(s) of the GPU raylet); its log ends:\n{tail}"
                )

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop this raylet's whole process tree (its `ray start`, raylet, agents, workers),
        also what outlived a `ray start` that exited (found by its session: it led one)."""
        if self.process is None:
            return
        procs = _session(self.process.pid)
        try:
            root = psutil.Process(self.process.pid)
            procs = [root, *root.children(recursive=True), *procs]
        except psutil.Error:
            pass
        localray.terminate(list({p.pid: p for p in procs}.values()), self.process, grace_s)
        self.process = None

    def kill(self) -> None:
        """SIGKILL this raylet's whole process tree at once, as a reclaimed VM goes: no goodbye,
        so the head counts the node alive until it misses its health checks."""
        assert self.process is not None, "the GPU raylet is not running"
        root = psutil.Process(self.process.pid)
        for process in [root, *root.children(recursive=True)]:
            try:
                process.kill()
            except psutil.Error:
                pass
        self.process.wait(timeout=10)
        self.process = None

    def close(self, timeout: float = 90) -> None:
        """Stop the raylet, then wait until the head no longer counts it alive.

        A raylet killed without a goodbye (a preemption) stays ALIVE in the GCS until it misses
        its health checks, and a lease the GCS sends it meanwhile goes with it when it is declared
        dead. CI under Ray 2.46.0 saw the shape once: test_capacity_probe.py's second test, right
        after the first killed its raylet, had its JobSupervisor actor die "never ran ... missing
        too many heartbeats" (not reproduced: 10 of 10 passed here under two CPU burners, the
        killed node declared dead within a second). So no test leaves such a node behind. A head
        that no longer listens has no node to wait for; one that answers late or badly is asked
        again until `timeout`."""
        self.stop()
        self.log.unlink(missing_ok=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.ip not in alive_raylet_ips(self.head.dashboard_url):
                    return
            except HeadGone:
                return
            except (OSError, ValueError):
                pass  # a late or failed answer of a live head: ask again
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the head still counts the stopped GPU raylet at {self.ip} alive after "
                    f"{timeout:.0f} s"
                )
            time.sleep(0.5)


def close_all(nodes: list[GpuNode], timeout: float = 90) -> None:
    """Stop every node first, then wait, within one shared `timeout`, for the head to count each
    dead: a stop or a wait that fails raises only after every node was stopped and waited for,
    naming every failure, so none is left running."""
    errors: list[Exception] = []
    for node in nodes:
        try:
            node.stop()
        except Exception as error:  # the next nodes must still be stopped
            errors.append(error)
    deadline = time.monotonic() + timeout
    for node in nodes:
        try:
            node.close(timeout=max(deadline - time.monotonic(), 0.0))
        except Exception as error:  # the next nodes must still be waited for
            errors.append(error)
    if errors:
        raise AssertionError("; ".join(f"{type(e).__name__}: {e}" for e in errors))


class HeadGone(ConnectionRefusedError):
    """Nothing listens at the head's dashboard any more (a head the test stopped or killed)."""


def alive_raylet_ips(dashboard_url: str) -> set[str]:
    """The addresses of the raylets the head's node table counts alive. Raises HeadGone when
    nothing listens at `dashboard_url`, OSError or ValueError when the head answered late or
    badly (a busy head: ask again)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{dashboard_url}/nodes?view=summary", timeout=10) as r:
            data = json.load(r)
    except urllib.error.URLError as error:
        if isinstance(error.reason, ConnectionRefusedError):
            raise HeadGone(str(error.reason)) from error
        raise
    except ConnectionRefusedError as error:
        raise HeadGone(str(error)) from error
    return {
        str(node["raylet"].get("nodeManagerAddress"))
        for node in data.get("data", {}).get("summary", [])
        if node.get("raylet", {}).get("state") == "ALIVE"
    }


def state_api_gpus(dashboard_url: str) -> float:
    """The alive GPUs in Ray's node table, as the supervisor counts them."""
    from jobs.head import node_events

    return node_events.alive_gpu_nodes(node_events.fetch(dashboard_url))[1]


def cluster_gpus(dashboard_url: str) -> float:
    """The GPUs the cluster reports, read from the dashboard (what `ray status` would say)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{dashboard_url}/nodes?view=summary", timeout=10) as r:
        data = json.load(r)
    total = 0.0
    for node in data["data"]["summary"]:
        if node.get("raylet", {}).get("state") == "ALIVE":
            total += float(node["raylet"].get("resourcesTotal", {}).get("GPU", 0))
    return total


def wait_gpus(dashboard_url: str, want: float, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            # Both views: the dashboard's summary (`ray status`) and the state API's node
            # table, which the supervisor reads and which can list a new node a moment later.
            if cluster_gpus(dashboard_url) == want and state_api_gpus(dashboard_url) == want:
                return
        except (OSError, KeyError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"cluster did not report {want} GPUs within {timeout} s")
        time.sleep(0.5)


@contextlib.contextmanager
def joined(head: localray.LocalRay, gpus: float) -> Iterator[GpuNode]:
    """A GPU raylet joined to `head`, yielded once the cluster (and its state API) counts its
    GPUs, closed on exit: the module fixtures' node."""
    node = GpuNode(head, gpus=gpus)
    try:
        node.join()
        yield node
    finally:
        node.close()
