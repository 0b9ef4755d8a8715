"""The fake GPU node's own address: never the head's, and the head's IP put back in the session's
node-IP file once the GPU node's `ray start` has written its own (tests/jobs/gpu_node.py)."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.jobs.gpu_node import loopback_ip, restore_head_ip


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
