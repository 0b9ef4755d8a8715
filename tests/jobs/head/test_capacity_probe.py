"""Settle by probing: which raylets answer and the GPUs free on them (jobs/head/capacity_probe.py),
read from a real local Ray whose GPU raylet is taken away."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from jobs.client.api import JobsAPI
from jobs.head import capacity_probe
from tests import localray
from tests.jobs.gpu_node import GpuNode


def _summary(*rows: dict) -> dict:
    return {"data": {"summary": [{"raylet": r} for r in rows]}}


def _status(usage: dict) -> dict:
    return {"data": {"clusterStatus": {"loadMetricsReport": {"usageByNode": usage}}}}


def _raylet(node_id: str, port: int, gpus: float = 0, state: str = "ALIVE") -> dict:
    return {
        "nodeId": node_id,
        "state": state,
        "nodeManagerAddress": "127.0.0.1",
        "nodeManagerPort": port,
        "resourcesTotal": {"GPU": gpus} if gpus else {"CPU": 2.0},
    }


def test_free_gpus_are_the_total_less_the_used_of_alive_raylets_only():
    listed = capacity_probe.raylets(
        _summary(_raylet("a", 1, 8), _raylet("b", 2, 8), _raylet("dead", 3, 8, "DEAD")),
        _status({"a": {"GPU": [3.0, 8.0]}, "dead": {"GPU": [0.0, 8.0]}}),
    )
    assert [(n.node_id, n.gpus_free) for n in listed] == [("a", 5.0), ("b", 8.0)]


def test_only_answering_nodes_count_their_free_gpus():
    listed = capacity_probe.raylets(
        _summary(_raylet("up", 1, 8), _raylet("lost", 2, 8)), _status({})
    )
    probed = capacity_probe.tally(listed, lambda n: n.node_id == "up")
    assert probed == capacity_probe.Probed(frozenset({"up"}), 8.0)


@pytest.mark.parametrize(
    "summary, status",
    [({"data": {}}, _status({})), (_summary(), {"data": {"clusterStatus": None}}), ([], {})],
)
def test_an_answer_that_is_not_rays_is_a_value_error(summary, status):
    with pytest.raises(ValueError, match="not a node summary"):
        capacity_probe.raylets(summary, status)


def test_a_closed_port_or_no_address_does_not_answer():
    port = localray.distinct_free_ports(1)[0]
    assert not capacity_probe.answers("127.0.0.1", port, timeout_s=0.5)
    assert not capacity_probe.answers("", 80)


@pytest.fixture(scope="module")
def head() -> Iterator[localray.LocalRay]:
    h = localray.start(num_cpus=2)
    try:
        yield h
    finally:
        h.stop()


@pytest.mark.ray
def test_a_lost_raylet_stops_answering_before_ray_marks_it_dead(head):
    """The point of probing: right after the GPU raylet is killed, while Ray's node table can
    still list it ALIVE with its GPUs (default health checks: dead after ~15-50 s), the probe
    already leaves it and its GPUs out."""
    node = GpuNode(head, gpus=2)
    try:
        node.join()
        before = capacity_probe.probe(head.dashboard_url)
        assert before.gpus_free == 2.0 and len(before.answering) == 2
        node.stop(grace_s=0)
        after = capacity_probe.probe(head.dashboard_url)
        assert after.gpus_free == 0.0 and len(after.answering) == 1
    finally:
        node.close()


@pytest.mark.ray
def test_gpus_held_by_a_placement_group_are_not_free(head):
    """Free, not total: a job holding one GPU leaves one free, as veRL's own check
    would count it."""
    node = GpuNode(head, gpus=2)
    # The project's client: it resends a submit whose link to the job agent dropped (Ray
    # 2.46/2.48's dashboard answers 500 ServerDisconnectedError then), which Ray's own does not.
    client = JobsAPI(head.dashboard_url)
    job = None
    try:
        node.join()
        job = client.submit_job(
            entrypoint='python -c "import ray, time; ray.init(); '
            "pg = ray.util.placement_group([{'GPU': 1}]); ray.get(pg.ready()); "
            "print('HELD', flush=True); time.sleep(120)\"",
            submission_id=f"held-{uuid.uuid4().hex[:8]}",
        )
        deadline = time.monotonic() + 90
        free = None
        while time.monotonic() < deadline:
            if "HELD\n" in client.get_job_logs(job):
                free = capacity_probe.probe(head.dashboard_url).gpus_free
                if free == 1.0:  # the GCS's usage report refreshes every few seconds
                    break
            time.sleep(0.5)
        info = client.get_job_info(job)
        assert free == 1.0, (info.status, info.message, client.get_job_logs(job))
    finally:
        if job is not None:
            client.stop_job(job)
        node.close()
