"""Supervision when the GPU nodes scale on demand, in the deterministic simulation.

The world's Ray autoscaler (tests/jobs/head/sim/world.py `autoscale`) launches the GPU nodes the
cluster's request lacks and removes nodes idle beyond it; the real supervisor asks for the run's
nodes and releases them (jobs/head/scale_up.py). On top of every invariant of the fault sweep,
an on-demand world must end with nothing requested and no GPU node up: a leak there is a bill.
"""

from __future__ import annotations

import dataclasses
import os
import random

import pytest

from jobs.head import events as ev
from tests.jobs.head.sim.test_simulation import _run, base, few_collections  # noqa: F401
from tests.jobs.head.sim.world import (
    IDLE_S,
    SCALE_UP_S,
    Fault,
    Schedule,
    World,
    random_schedule,
    remove_tree,
)

SCHEDULES = int(os.environ.get("SIM_ON_DEMAND_SCHEDULES", "1000"))
CHUNK = 250


def _on_demand(seed: int) -> Schedule:
    """The fault sweep's schedule for `seed`, on GPUs that scale on demand (printed whole when
    it fails: `random_schedule(seed)` alone would replay it on static GPUs)."""
    schedule = random_schedule(seed)
    # Another run asking at once, its union read before this run's request (a generator of
    # its own: every earlier seed keeps its faults): a third of the seeds, at the start (the
    # first request) or after a preemption (the request that replaces a lost node).
    rival = random.Random(seed + 7_000_003)
    faults = list(schedule.faults)
    if rival.random() < 1 / 3:
        preempts = [f.at for f in faults if f.kind == "preempt"]
        faults.append(Fault(rival.choice([0.0, *preempts]), "rival_union"))
        faults.sort(key=lambda f: f.at)
    return dataclasses.replace(schedule, faults=faults, on_demand=True, from_seed=False)


def _events(world: World) -> list[dict]:
    return world.store().events()


@pytest.mark.simulation
@pytest.mark.parametrize("first", range(0, SCHEDULES, CHUNK))
def test_random_fault_schedules_on_demand_keep_every_invariant_and_leak_no_node(
    base,  # noqa: F811
    first,
    few_collections,  # noqa: F811
):
    for seed in range(first, min(first + CHUNK, SCHEDULES)):
        _run(_on_demand(seed), base / str(seed))
        remove_tree(base / str(seed))


def test_a_run_on_an_empty_cluster_waits_for_the_nodes_its_request_brings(base):  # noqa: F811
    world = _run(Schedule(seed=11, faults=[], on_demand=True), base)
    assert world.succeeded
    recs = _events(world)
    kinds = [r["event"] for r in recs]
    assert kinds.index(ev.GPUS_REQUESTED) < kinds.index(ev.WAITING) < kinds.index(ev.GPUS_BACK)
    assert kinds.index(ev.GPUS_BACK) < kinds.index(ev.SUBMITTED)
    [waiting] = [r for r in recs if r["event"] == ev.WAITING]
    assert waiting["scaling_up"] and waiting["message"].startswith("scaling up:")
    [back] = [r for r in recs if r["event"] == ev.GPUS_BACK]
    # From the request to both nodes joined, within one poll of the slower node's arrival.
    assert SCALE_UP_S[0] <= back["scale_up_s"] <= SCALE_UP_S[1] + 2 * 120.0
    assert kinds[-2:] == [ev.GPUS_RELEASED, ev.FINISHED]
    assert world.scale_downs == 2  # both nodes went once idle after the run


@pytest.mark.parametrize("after_idle_s", [-120.0, -60.0, 0.0, 30.0, 60.0, 120.0])
def test_a_scale_down_racing_a_resumes_request_never_costs_the_run(
    base,  # noqa: F811
    after_idle_s,
):
    """The user stops the run (its request released: the nodes go idle), then resumes it around
    the moment the autoscaler removes them: before, at or after. Whichever wins, the resumed run
    gets nodes again and finishes, and nothing is left up."""
    stop_at = 3000.0
    resume_at = stop_at + IDLE_S + after_idle_s
    world = _run(
        Schedule(
            seed=12,
            faults=[Fault(stop_at, "stop"), Fault(resume_at, "resume")],
            on_demand=True,
        ),
        base,
    )
    assert world.succeeded
    recs = ev.life(_events(world))
    assert [r["event"] for r in recs].count(ev.GPUS_REQUESTED) == 1
    assert ev.outcome(recs)["event"] == ev.FINISHED


def test_a_head_loss_takes_the_request_and_the_rearmed_supervisor_asks_again(base):  # noqa: F811
    world = _run(Schedule(seed=13, faults=[Fault(2500, "head_loss", 300)], on_demand=True), base)
    assert world.succeeded
    asked_by = [r["supervisor"] for r in _events(world) if r["event"] == ev.GPUS_REQUESTED]
    assert len(asked_by) == 2 and asked_by[0] != asked_by[1]


def test_a_stop_after_the_supervisor_was_killed_drops_the_request(base):  # noqa: F811
    """Killed outright, the supervisor never releases; the user's stop then finds no supervisor
    holding the run and drops the request itself (jobs/head/stop.py `record_stop`)."""
    world = _run(
        Schedule(seed=14, faults=[Fault(2000, "sigkill"), Fault(2030, "stop")], on_demand=True),
        base,
    )
    recs = _events(world)
    assert ev.outcome(recs)["event"] == ev.STOPPED
    assert ev.GPUS_RELEASED not in [r["event"] for r in recs]  # no supervisor released it
    assert world.asked == [] and world.scale_downs >= 2


def test_a_request_lost_to_another_runs_union_is_sent_again(base, monkeypatch):  # noqa: F811
    """Two runs asking Ray's autoscaler at once each send their own union, and Ray keeps the
    last: here the other run's, read before this run's request was in the KV, replaces it at
    once (0 nodes asked while 2 were wanted). The supervisor sends its request again while it
    waits, and the run gets its nodes; with the resend gone (the planted bug
    `mutants/scale_up_never_resent.patch`) nothing asks again and the run never starts."""
    from jobs.head.run_gpus import RunGpus

    schedule = Schedule(seed=11, faults=[Fault(0, "rival_union")], on_demand=True)
    world = _run(schedule, base / "sound")
    assert world.succeeded
    lost = next(i for i, line in enumerate(world.history) if "another run's request" in line)
    assert any("request is now 2 node(s)" in line for line in world.history[lost:])
    monkeypatch.setattr(RunGpus, "resend", lambda self: None)
    with pytest.raises(pytest.fail.Exception, match="the run did not finish"):
        _run(schedule, base / "planted")
