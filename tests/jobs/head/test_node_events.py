"""Node deaths during an attempt, read from a real local Ray node table after a GPU raylet is
SIGKILLed (as a reclaimed spot VM ends), and the pure rules on rows."""

from __future__ import annotations

import time

import pytest

from jobs.head import node_events
from tests.jobs.gpu_node import GpuNode


def _row(node_id, state, gpus, start, end, head=False, message=None):
    return {
        "node_id": node_id,
        "state": state,
        "is_head_node": head,
        "start_time_ms": start,
        "end_time_ms": end,
        "resources_total": {"GPU": gpus} if gpus else {"CPU": 2.0},
        "state_message": message,
    }


def test_only_worker_nodes_dead_within_the_window_count():
    rows = [
        _row("head", "DEAD", 0, 0, 5000, head=True),
        _row("gpu-before", "DEAD", 2, 0, 900),  # marked dead before the attempt started
        _row("gpu-during", "DEAD", 2, 0, 1500, message="Terminated due to preemption"),
        _row("gpu-alive", "ALIVE", 2, 0, 0),
        _row("cpu-during", "DEAD", 0, 0, 1500),
        _row("gpu-later", "DEAD", 2, 3000, 3500),
    ]  # joined after the judgement
    deaths = node_events.deaths_during(rows, start_ms=1000, end_ms=2000, gpus_needed=2)
    assert [d.node_id for d in deaths] == ["gpu-during"]
    assert "Terminated due to preemption" in deaths[0].describe()
    # A run without GPUs counts any worker node, never the head.
    assert [d.node_id for d in node_events.deaths_during(rows, 1000, 2000, 0)] == [
        "gpu-during",
        "cpu-during",
    ]


def test_only_the_attempts_own_nodes_count_when_ray_says_where_it_ran():
    """Any dead GPU node, hosting the attempt or not, and any death up to the
    judgement's "now", made a crash a preemption."""
    rows = [
        _row("host", "DEAD", 8, 0, 1500),
        _row("spare", "DEAD", 8, 0, 1500),  # a GPU node the attempt never used
        _row("host-later", "DEAD", 8, 0, 9000),  # marked dead long after the judgement window
    ]
    hosts = frozenset({"host", "host-later"})
    deaths = node_events.deaths_during(rows, 1000, 2000, gpus_needed=16, hosts=hosts)
    assert [d.node_id for d in deaths] == ["host"]
    # Unknown hosts: every GPU node inside the window, still nothing marked after it.
    assert [d.node_id for d in node_events.deaths_during(rows, 1000, 2000, 16)] == [
        "host",
        "spare",
    ]


def test_hosts_reads_the_jobs_actors_and_tasks_from_the_state_api():
    """The production probe: actors and tasks filtered by the Ray job id, both listings."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from urllib.parse import parse_qs, urlparse

    asked: list[tuple[str, dict]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            asked.append((url.path, parse_qs(url.query)))
            node = {"/api/v0/actors": "n-actor", "/api/v0/tasks": "n-task"}[url.path]
            rows = [{"node_id": node}, {"node_id": None}]
            body = json.dumps({"data": {"result": {"result": rows}}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        assert node_events.hosts(url, "02000000") == frozenset({"n-actor", "n-task"})
    finally:
        server.shutdown()
        server.server_close()
    for _path, query in asked:
        assert query["filter_keys"] == ["job_id"] and query["filter_values"] == ["02000000"]
        assert query["filter_predicates"] == ["="]


def test_a_malformed_answer_is_a_value_error():
    with pytest.raises(ValueError, match="not a node listing"):
        node_events.parse({"data": {"result": None}})


def test_stability_restarts_when_the_node_set_changes():
    s = node_events.Stability()
    assert s.observe(frozenset({"a"}), 10.0) == 0.0
    assert s.observe(frozenset({"a"}), 15.0) == 5.0
    assert s.observe(frozenset({"b"}), 16.0) == 0.0
    assert s.observe(frozenset({"b"}), 20.0) == 4.0


@pytest.mark.ray
@pytest.mark.ray
def test_a_sigkilled_gpu_raylet_is_a_death_during_the_window(ray_head):
    node = GpuNode(ray_head, gpus=2)
    try:
        node.join()
        before = node_events.alive_gpu_nodes(node_events.fetch(ray_head.dashboard_url))
        assert before[1] == 2.0
        start_ms = int(time.time() * 1000)
        node.kill()  # a VM reclaimed: nothing on it gets to say goodbye
        deadline = time.monotonic() + 90
        deaths: list[node_events.NodeDeath] = []
        while not deaths:
            assert time.monotonic() < deadline, "Ray never marked the killed raylet dead"
            time.sleep(0.5)
            rows = node_events.fetch(ray_head.dashboard_url)
            deaths = node_events.deaths_during(rows, start_ms, int(time.time() * 1000), 2)
        assert deaths[0].node_id in before[0] and deaths[0].gpus == 2.0
        assert "Unexpected termination" in deaths[0].reason
        assert node_events.alive_gpu_nodes(rows) == (frozenset(), 0)
    finally:
        node.close()
