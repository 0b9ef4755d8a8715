"""The fake GPU node's own address: never the head's, and the head's IP put back in the session's
node-IP file once the GPU node's `ray start` has written its own; a closed node is one the head
no longer counts alive (tests/jobs/gpu_node.py)."""

from __future__ import annotations

import http.server
import ipaddress
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import localray
from tests.jobs.gpu_node import GpuNode, close_all, loopback_ip, restore_head_ip


def test_every_gpu_node_of_a_process_has_its_own_loopback_address_never_the_heads():
    ips = [loopback_ip(n) for n in range(2000)]
    assert len(set(ips)) == len(ips)
    assert "127.0.0.1" not in ips
    assert all(ipaddress.ip_address(ip).is_loopback for ip in ips)


def _node_ip(path: Path) -> str:
    return json.loads(path.read_text())["node_ip_address"]


def test_the_heads_ip_is_put_back_after_the_gpu_node_wrote_its_own(tmp_path):
    path = tmp_path / "node_ip_address.json"
    path.write_text(json.dumps({"node_ip_address": "192.0.2.2"}))
    starter = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        # What the GPU node's `ray start` does a moment after it starts.
        writer = threading.Timer(
            0.3, lambda: path.write_text(json.dumps({"node_ip_address": "127.0.1.1"}))
        )
        writer.start()
        restore_head_ip(path, "192.0.2.2", "127.0.1.1", starter, timeout=10)
        writer.join()
        assert _node_ip(path) == "192.0.2.2"
    finally:
        starter.kill()
        starter.wait()


def test_a_start_that_ends_before_writing_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "node_ip_address.json"
    path.write_text(json.dumps({"node_ip_address": "192.0.2.2"}))
    starter = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    started = time.monotonic()
    restore_head_ip(path, "192.0.2.2", "127.0.1.1", starter, timeout=10)
    assert time.monotonic() - started < 5  # it did not wait out its timeout
    assert _node_ip(path) == "192.0.2.2"
    starter.wait()


class _NodeTable(http.server.BaseHTTPRequestHandler):
    """The head's `/nodes?view=summary`: the GPU raylet ALIVE for its first `alive_reads`."""

    alive_reads = 0
    failed_reads = 0
    reads = 0

    def do_GET(self) -> None:
        cls = type(self)
        cls.reads += 1
        if cls.reads <= cls.failed_reads:
            self.send_error(500, "the head is busy")
            return
        state = "ALIVE" if cls.reads <= cls.alive_reads else "DEAD"
        body = json.dumps(
            {
                "data": {
                    "summary": [
                        {"raylet": {"state": "ALIVE", "nodeManagerAddress": "192.0.2.2"}},
                        {"raylet": {"state": state, "nodeManagerAddress": "127.0.1.7"}},
                    ]
                }
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _closed_node(
    tmp_path: Path, alive_reads: int, failed_reads: int = 0
) -> tuple[GpuNode, type[_NodeTable], Callable]:
    handler = type(
        "Table",
        (_NodeTable,),
        {"alive_reads": alive_reads, "failed_reads": failed_reads, "reads": 0},
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    head = SimpleNamespace(
        dashboard_url=f"http://127.0.0.1:{server.server_address[1]}", temp_dir=tmp_path / "head"
    )
    node = GpuNode(head, gpus=2)  # type: ignore[arg-type]
    node.ip = "127.0.1.7"

    def shut() -> None:
        server.shutdown()
        server.server_close()

    return node, handler, shut


def test_close_waits_until_the_head_no_longer_counts_a_killed_raylet_alive(tmp_path):
    """A killed raylet stays ALIVE in the GCS until its health checks fail; the next test's
    JobSupervisor actor can be sent to it meanwhile and die "never ran"."""
    node, table, shut = _closed_node(tmp_path, alive_reads=3)
    try:
        node.close(timeout=30)
        assert table.reads == 4  # three reads saw it alive, the fourth dead
    finally:
        shut()


def test_close_names_the_raylet_the_head_keeps_alive(tmp_path):
    node, _table, shut = _closed_node(tmp_path, alive_reads=10**6)
    try:
        with pytest.raises(AssertionError, match=r"127\.0\.1\.7 alive after 1 s"):
            node.close(timeout=1)
    finally:
        shut()


def test_close_does_not_wait_for_a_head_that_no_longer_answers(tmp_path):
    port = localray.distinct_free_ports(1)[0]
    head = SimpleNamespace(dashboard_url=f"http://127.0.0.1:{port}", temp_dir=tmp_path / "head")
    node = GpuNode(head, gpus=2)  # type: ignore[arg-type]
    started = time.monotonic()
    node.close(timeout=30)
    assert time.monotonic() - started < 5


def test_close_asks_again_when_the_head_answers_badly(tmp_path):
    """A busy head's error answer is no sign the raylet is gone: only a head that no longer
    listens ends the wait early."""
    node, table, shut = _closed_node(tmp_path, alive_reads=4, failed_reads=2)
    try:
        node.close(timeout=30)
        assert table.reads == 5  # two failed answers, two saw it alive, the fifth dead
    finally:
        shut()


class _Stopped(GpuNode):
    """A node whose raylet the head counts alive for ever; records when it was stopped."""

    def __init__(self, head: SimpleNamespace, log: list[str], name: str) -> None:
        super().__init__(head, gpus=2)  # type: ignore[arg-type]
        self.name = name
        self.record = log
        self.ip = "127.0.1.7"

    def stop(self, grace_s: float = 5.0) -> None:
        self.record.append(f"stop {self.name}")


def test_close_all_stops_every_node_before_a_wait_can_fail(tmp_path):
    node, _table, shut = _closed_node(tmp_path, alive_reads=10**6)
    head = node.head
    log: list[str] = []
    nodes = [_Stopped(head, log, "a"), _Stopped(head, log, "b")]
    started = time.monotonic()
    try:
        with pytest.raises(AssertionError, match=r"(127\.0\.1\.7 alive after \d s.*){2}"):
            close_all(nodes, timeout=1)
    finally:
        shut()
    assert log[:2] == ["stop a", "stop b"]
    # One deadline for all: two stuck nodes do not wait a timeout each.
    assert time.monotonic() - started < 1.9


class _StopFails(_Stopped):
    def stop(self, grace_s: float = 5.0) -> None:
        super().stop(grace_s)
        raise OSError("the node's process table could not be read")


def test_close_all_stops_the_next_nodes_when_one_stop_fails(tmp_path):
    node, _table, shut = _closed_node(tmp_path, alive_reads=0)
    log: list[str] = []
    nodes = [_StopFails(node.head, log, "a"), _Stopped(node.head, log, "b")]
    try:
        with pytest.raises(AssertionError, match="process table could not be read"):
            close_all(nodes, timeout=5)
    finally:
        shut()
    assert log[:2] == ["stop a", "stop b"]
