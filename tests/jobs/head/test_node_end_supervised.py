"""Flex-start runs on a real local Ray: each attempt told to save before its nodes end, NeMo RL's
early stop after that save taken for what it is (not the run's success), and nodes about to end
not taken as capacity.

The GPU node is a second local raylet; Ray records its start time as it would a GKE node's. The
attempt stands in for NeMo RL's driver: it prints the arguments it got and, the first time, the
line NeMo RL v0.4.0 prints when it returns after its deadline save (grpo.py L1390), then exits 0.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from ray.job_submission import JobStatus

from jobs.client.dashboard import Dashboard
from jobs.head import events as ev
from jobs.head import node_end
from jobs.head.run_store import RunStore
from jobs.runs import handoff, plan
from tests.jobs.conftest import wait_until
from tests.jobs.fast_supervisor import set_fast
from tests.jobs.gpu_node import GpuNode, joined

pytestmark = pytest.mark.ray

WEEK_S = 7 * 86400.0


@pytest.fixture(scope="module")
def gpu_node(ray_head) -> Iterator[GpuNode]:
    with joined(ray_head, 2) as node:
        yield node


@pytest.fixture(autouse=True)
def fast_supervisor(monkeypatch) -> None:
    set_fast(monkeypatch)


def _nemo_rl_stand_in(marker: str) -> list[str]:
    code = (
        "import os, sys\n"
        "print('ARGS', sys.argv[1:], flush=True)\n"
        f"if not os.path.exists({marker!r}):\n"
        f"    open({marker!r}, 'w').close()\n"
        "    print('Saving checkpoint for step 7', flush=True)\n"
        f"    print({node_end.NEMO_RL_STOPPED!r}, flush=True)\n"
        "print('done', flush=True)\n"
    )
    return ["python", "-c", code]


def _hand_off(ray_url: str, tmp_path, run: str, command: list[str], max_run_s: float) -> RunStore:
    sub = plan.for_command(command, run, None, None, "test")
    handoff.hand_off(
        Dashboard(ray_url),
        sub,
        max_restarts=1,
        gpus=2,
        checkpoint_dir="",
        hint_where="",
        options=handoff.Options(
            runs_root=str(tmp_path),
            max_preemptions=3,
            node_max_run_s=max_run_s,
            save_before_node_end=node_end.NEMO_RL,
        ),
    )
    return RunStore(str(tmp_path), run)


def _events(store: RunStore) -> list[dict]:
    return list(store.events())


def test_a_nemo_rl_attempt_that_stops_after_its_deadline_save_is_followed_by_the_next(
    ray_url, ray_client, gpu_node, tmp_path
):
    run = f"flex-{uuid.uuid4().hex[:8]}"
    store = _hand_off(ray_url, tmp_path, run, _nemo_rl_stand_in(str(tmp_path / "saved")), WEEK_S)
    wait_until(lambda: ev.outcome(_events(store)) is not None, timeout=120, what="the run to end")
    recs = _events(store)
    kinds = [r["event"] for r in recs]
    assert ev.outcome(recs)["event"] == ev.FINISHED, json.dumps(
        recs, indent=1
    ) + ray_client.get_job_logs(f"{run}-a2")
    # Both attempts were told when to save, with the week the GPU node has left.
    told = [r for r in recs if r["event"] == ev.SAVE_BEFORE_NODE_END]
    assert [r["submission_id"] for r in told] == [f"{run}-a1", f"{run}-a2"]
    for attempt in (1, 2):
        logs = ray_client.get_job_logs(f"{run}-a{attempt}")
        assert (
            f"'{node_end.NEMO_RL_KEY}=06:23:" in logs or f"'{node_end.NEMO_RL_KEY}=06:22:" in logs
        ), logs
    # Attempt 1 SUCCEEDED in Ray's eyes, yet the run went on: counted as a preemption.
    [first_end] = [r for r in recs if r["event"] == ev.ATTEMPT_ENDED and r["attempt"] == 1]
    assert first_end["status"] == "SUCCEEDED" and first_end["saved_for_node_end"] is True
    assert "before its flex-start nodes reach their maximum run duration" in first_end["message"]
    [second] = [r for r in recs if r["event"] == ev.SUBMITTED and r["attempt"] == 2]
    assert second["preemptions_used"] == 1 and second["restarts_used"] == 0
    assert kinds.count(ev.FINISHED) == 1
    assert ray_client.get_job_status(f"{run}-a2") == JobStatus.SUCCEEDED


def test_gpu_nodes_about_to_reach_their_maximum_run_are_not_capacity(
    ray_url, ray_client, gpu_node, tmp_path
):
    run = f"flex-end-{uuid.uuid4().hex[:8]}"
    # The GPU node ends within the save margin: no attempt could train and save on it.
    store = _hand_off(
        ray_url, tmp_path, run, ["python", "-c", "print('ran')"], node_end.SAVE_MARGIN_S
    )
    wait_until(
        lambda: any(r["event"] == ev.WAITING for r in _events(store)),
        timeout=60,
        what="a wait for capacity",
    )
    waiting = [r for r in _events(store) if r["event"] == ev.WAITING][0]
    assert "the cluster has 0" in waiting["message"], waiting
    assert f"{run}-a1" not in {j.submission_id for j in ray_client.list_jobs()}
    ray_client.stop_job(f"{run}-s1")
    wait_until(
        lambda: ray_client.get_job_status(f"{run}-s1").is_terminal(),
        timeout=60,
        what="the supervisor to stop",
    )
    assert f"{run}-a1" not in {j.submission_id for j in ray_client.list_jobs()}
