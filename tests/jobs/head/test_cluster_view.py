"""The supervisor's view of the cluster: the node table kept across a dashboard restart, GPU
stability, flex-start nodes too close to their end left out of capacity, and every probe read
with a safe default when it cannot answer now."""

from __future__ import annotations

import http.client
from dataclasses import replace

import pytest

from jobs.head import node_end
from jobs.head.capacity_probe import Probed
from jobs.head.cluster_view import ClusterView
from jobs.head.probes import Probes
from tests.jobs.head.step_clock import StepClock
from tests.jobs.head.test_node_end import node
from tests.jobs.head.test_protocol import spec


def _raise(e: Exception):
    def probe(*_args: object) -> object:
        raise e

    return probe


def test_the_node_table_is_kept_while_the_dashboard_cannot_answer():
    clock, table = StepClock(10_000.0), [node("a", 9_000.0), node("b", 9_000.0, gpus=0)]
    probes = Probes(nodes=lambda: table, log_size=lambda _j: 0)
    view = ClusterView(probes, spec(), clock)
    assert view.observe() == (8.0, 0.0)
    clock.now += 30.0
    view.probes = replace(probes, nodes=_raise(http.client.HTTPException("restarting")))
    assert view.observe() == (8.0, 30.0)  # the last table, stable since it was first seen
    assert view.nodes == table


def test_flex_start_nodes_ending_before_a_save_are_not_capacity():
    clock = StepClock(100_000.0)
    young, old = node("young", 99_000.0), node("old", 100_000.0 - 3 * 3600 + 600)
    probes = Probes(nodes=lambda: [young, old], log_size=lambda _j: 0)
    view = ClusterView(probes, spec(node_max_run_s=3 * 3600.0), clock)
    assert node_end.SAVE_MARGIN_S > 600
    assert view.observe()[0] == 8.0
    assert [n["node_id"] for n in view.lasting_nodes()] == ["young"]
    everlasting = ClusterView(probes, spec(), clock)
    everlasting.observe()
    assert len(everlasting.lasting_nodes()) == 2


@pytest.mark.parametrize(("framework", "capacity"), [("nemo-rl", 0.0), ("verl", 8.0), ("", 8.0)])
def test_a_node_too_close_to_its_end_for_nemo_rl_to_start_and_train_is_not_its_capacity(
    framework, capacity
):
    """NeMo RL's deadline counts from after its start (node_end.NEMO_RL_START_S): on a node
    with less left than the save margin, that start and as long again to train, an attempt
    would load, save after a step and return, and the next one the same until the node ended.
    veRL's expiry is absolute: it trains on the node until the end."""
    clock = StepClock(100_000.0)
    left = node_end.SAVE_MARGIN_S + 2 * node_end.NEMO_RL_START_S - 600
    assert left > node_end.SAVE_MARGIN_S
    ending = node("ending", 100_000.0 - 12 * 3600 + left)
    probes = Probes(nodes=lambda: [ending], log_size=lambda _j: 0)
    view = ClusterView(
        probes, spec(node_max_run_s=12 * 3600.0, save_before_node_end=framework), clock
    )
    assert view.observe()[0] == capacity


@pytest.mark.parametrize("hours", [1, 2, 3, 6, 24, 7 * 24])
def test_no_node_life_leaves_nemo_rl_without_a_moment_when_all_its_nodes_are_capacity(hours):
    """Two nodes half a life apart (the worst offset), a new one joining 15 min after each end:
    whatever the pool's maximum run duration (1 h to GKE's 7 days), a moment comes when both
    have more left than the window that keeps them out of capacity."""
    life = hours * 3600.0
    window = node_end.no_capacity_within_s("nemo-rl", life)
    assert node_end.SAVE_MARGIN_S <= window <= node_end.SAVE_MARGIN_S + 2 * node_end.NEMO_RL_START_S
    replace_s = 900.0
    # When a node's replacement joins, the other node has half a life less the delay left;
    # if that is too little, the other's replacement joins when this one has the rest.
    other_left = life / 2 - replace_s
    assert other_left >= window or life - (other_left + replace_s) >= window


def test_probes_that_cannot_answer_now_give_their_safe_default():
    failing = _raise(OSError("the dashboard restarts"))
    probes = Probes(
        nodes=list,
        log_size=lambda _j: 0,
        steps=failing,
        hosts=_raise(KeyError("job_id")),
        capacity=failing,
        stopped_for_node_end=failing,
        publish=failing,
    )
    view = ClusterView(probes, spec(), StepClock(10_000.0))
    assert view.steps("r-a1") == 0
    assert view.hosts("r-a1") is None
    assert view.probe() is None
    view.set_gauges("r-a1", True)  # no raise: the figures wait for the next turn
    assert ClusterView(replace(probes, capacity=None), spec(), StepClock(10_000.0)).probe() is None
    answered = Probed(answering=frozenset({"a"}), gpus_free=8.0)
    assert ClusterView(
        replace(probes, capacity=lambda: answered), spec(), StepClock(10_000.0)
    ).probe() == (answered)


@pytest.mark.parametrize(
    ("ended", "node_max_run_s", "framework", "read"),
    [
        ("SUCCEEDED", 3600.0, node_end.NEMO_RL, True),
        ("FAILED", 3600.0, node_end.NEMO_RL, False),
        ("SUCCEEDED", 0.0, node_end.NEMO_RL, False),
        ("SUCCEEDED", 3600.0, node_end.VERL, False),
    ],
)
def test_only_a_nemo_rl_success_on_flex_start_nodes_is_read_for_a_node_end_stop(
    ended, node_max_run_s, framework, read
):
    asked: list[str] = []

    def stopped(job_id: str) -> bool:
        asked.append(job_id)
        return True

    probes = Probes(nodes=list, log_size=lambda _j: 0, stopped_for_node_end=stopped)
    run = spec(node_max_run_s=node_max_run_s, save_before_node_end=framework)
    assert ClusterView(probes, run, StepClock(10_000.0)).stopped_for_node_end("r-a1", ended) is read
    assert asked == (["r-a1"] if read else [])
    unreadable = replace(probes, stopped_for_node_end=_raise(ValueError("torn log")))
    assert not ClusterView(unreadable, run, StepClock(10_000.0)).stopped_for_node_end("r-a1", ended)
