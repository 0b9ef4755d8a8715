"""Goodput: every second of a run's life lands in exactly one bucket, from what Ray and the
frameworks really record."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.head import events as ev
from jobs.runs import goodput, metrics
from jobs.runs.goodput import AttemptTrace, Step
from tests.jobs.conftest import stack_outputs

T0 = 1_800_000_000_000  # ms


def at(seconds: float) -> int:
    return T0 + int(seconds * 1000)


def rec(event: str, seconds: float, **fields) -> dict:
    when = datetime.fromtimestamp(at(seconds) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"t": when, "event": event, "run": "r", "message": "", **fields}


def test_a_preempted_run_splits_into_work_redo_saves_restart_capacity_and_settle() -> None:
    # attempt 1: 100 s start-up, steps 1-5 of 100 s, a 20 s save after step 4, preempted mid-step
    # 6 (50 s in); then 600 s waiting for GPUs, 60 s settling, 10 s to submit; attempt 2 resumes
    # from step 4's checkpoint: 100 s start-up, step 5 again, steps 6-7.
    first = {n: Step(100.0, 20.0 if n == 4 else 0.0) for n in range(1, 6)}
    second = {n: Step(100.0) for n in range(5, 8)}
    a1_end = 100 + 5 * 100 + 20 + 50
    waiting, settling, submitted = a1_end + 5, a1_end + 605, a1_end + 665
    a2_start = a1_end + 675
    now = a2_start + 100 + 300
    attempts = [
        AttemptTrace("r-a1", at(0), at(a1_end), first),
        AttemptTrace("r-a2", at(a2_start), None, second),
    ]
    records = [
        rec(ev.ARMED, 0, fresh=True),
        rec(ev.SUBMITTED, 0),
        rec(ev.ATTEMPT_ENDED, a1_end),
        rec(ev.PREEMPTED, a1_end + 1),
        rec(ev.WAITING, waiting),
        rec(ev.GPUS_BACK, settling - 1),
        rec(ev.SETTLING, settling),
        rec(ev.SUBMITTED, submitted),
    ]
    g = goodput.account(attempts, records, now_ms=at(now), gpus=16)
    assert g.seconds == pytest.approx(
        {
            "productive": 700.0,  # steps 1-7 once
            "redone": 100.0,  # step 5 again
            "saves": 20.0,
            # a1's start-up and cut step, the supervisor's turns (ended -> waiting, gpus back ->
            # settling, submitted -> running), a2's start-up
            "restart": (100 + 50) + (5 + 1 + 10) + 100,
            "capacity": 599.0,
            "settle": 60.0,
            "stalls": 0.0,
        }
    )
    assert g.total_s == pytest.approx(now)
    assert g.gpu_hours()["productive"] == pytest.approx(16 * 700 / 3600)
    assert g.percent == pytest.approx(100 * 700 / now)
    assert g.interruptions == [
        pytest.approx(
            {"after": "r-a1", "redone": 100.0, "capacity": 599.0, "settle": 60.0, "restart": 116.0}
        )
    ]
    assert g.as_json()["interruptions"][0]["gpu_hours"] == round(16 * 875 / 3600, 3)
    head, buckets, cost, startup = goodput.lines_of(g.as_json())
    assert cost == (
        "the end of r-a1: 3.89 GPU-h (redone 100 s, capacity 599 s, settle 60 s, restart 116 s)"
    )
    # a1: its hand-off to its first step (its 100-s start-up and its cut step's 50 s, as its
    # steps sit at its end); a2: a1's end to its first step (the gap and a2's start-up).
    assert startup == "start-up (GPUs asked for to first step): r-a1 2.5 min, r-a2 12.9 min"
    assert head == f"40% productive of {16 * now / 3600:.2f} GPU-h"
    # docs/jobs.md shows this run's status lines
    doc = (Path(__file__).resolve().parents[3] / "docs" / "jobs.md").read_text()
    assert f"goodput: {head}\n" in doc and f" {buckets}\n" in doc and f" {cost}\n" in doc
    assert f" {startup}\n" in doc
    assert buckets.startswith("productive 3.11, redone 0.44, saves 0.09, restart 1.18, capacity")
    assert "stalls" not in buckets


def test_a_stalled_attempt_puts_its_silence_in_stalls() -> None:
    attempts = [AttemptTrace("r-a1", at(0), at(3000), {1: Step(500.0)})]
    records = [rec(ev.STALLED, 2990, submission_id="r-a1", quiet_s=1800.0)]
    g = goodput.account(attempts, records, now_ms=at(3000), gpus=8)
    assert g.seconds["stalls"] == pytest.approx(1800.0)
    assert g.seconds["restart"] == pytest.approx(700.0)


def test_time_between_an_end_and_a_resume_belongs_to_no_bucket() -> None:
    attempts = [
        AttemptTrace("r-a1", at(0), at(1000), {1: Step(900.0)}),
        AttemptTrace("r-a2", at(90_000), at(91_000), {2: Step(900.0)}),
    ]
    records = [
        rec(ev.ARMED, 0, fresh=True),
        rec(ev.GAVE_UP, 1000),
        rec(ev.ARMED, 89_990, fresh=True),
        rec(ev.FINISHED, 91_000),
    ]
    g = goodput.account(attempts, records, now_ms=at(200_000), gpus=8)
    assert g.total_s == pytest.approx(1000 + 1010)
    assert g.interruptions == []  # a resume after an end is a new life, not an interruption
    assert g.seconds["productive"] == pytest.approx(1800.0)


def test_step_lines_that_claim_more_than_the_attempt_lasted_are_scaled_into_it() -> None:
    attempts = [AttemptTrace("r-a1", at(0), at(100), {1: Step(150.0, 50.0)})]
    g = goodput.account(attempts, [], now_ms=at(100), gpus=None)
    assert g.seconds["productive"] + g.seconds["saves"] == pytest.approx(100.0)
    assert g.seconds["restart"] == pytest.approx(0.0)
    assert g.gpu_hours() is None
    # Under an hour in all: minutes (it read "0.03 h", and a shorter run 0.00 in every bucket).
    head, buckets, _ = goodput.lines_of(g.as_json())
    assert head == "75% productive of 1.67 min"
    assert buckets == "productive 1.25, saves 0.42"


# NeMo RL v0.4.0 prints its timers as `  • name: Xs (P%)` after `  • Total step time: Xs`
# (nemo_rl/algorithms/grpo.py L1359-1366); checkpointing is timed inside the step (L927, L1273).
NEMO_STEP = """========================= Step 3/10 =========================
  • Loss: 0.1
  • Avg Reward: 0.5
  • Total step time: 120.00s
  • policy_training: 60.00s (50.0%)
  • checkpointing: 30.00s (25.0%)
"""
# veRL 0.6.0's console line: timing_s/step excludes timing_s/testing and timing_s/save_checkpoint
# (verl/trainer/ppo/ray_trainer.py L1043, L1203, L1226).
VERL_STEP = (
    "(TaskRunner pid=7) step:3 - critic/score/mean:0.5 - timing_s/step:100.0"
    " - timing_s/testing:15.0 - timing_s/save_checkpoint:25.0"
)


def test_nemo_rl_saves_are_taken_out_of_its_step_time() -> None:
    points = metrics.parse(NEMO_STEP).points
    assert goodput.steps_of(points, "nemo-rl") == {3: Step(compute_s=90.0, save_s=30.0)}


def test_verl_validation_is_work_and_its_save_comes_on_top_of_the_step() -> None:
    points = metrics.parse(VERL_STEP).points
    assert goodput.steps_of(points, "verl") == {3: Step(compute_s=115.0, save_s=25.0)}


EVENTS = st.sampled_from(
    [ev.WAITING, ev.STILL_WAITING, ev.GPUS_BACK, ev.SETTLING, ev.SUBMITTED, ev.ATTEMPT_ENDED]
)


@st.composite
def lives(draw):
    """A run's attempts (in order, not overlapping) and supervisor records, with no end."""
    t, attempts, records = 0.0, [], []
    for n in range(draw(st.integers(0, 4))):
        for _ in range(draw(st.integers(0, 3))):
            t += draw(st.integers(1, 5000))
            records.append(rec(draw(EVENTS), t))
        t += draw(st.integers(1, 5000))
        start = t
        t += draw(st.integers(0, 20_000))
        steps = draw(
            st.dictionaries(
                st.integers(1, 30),
                st.builds(Step, st.floats(0, 3000), st.floats(0, 600)),
                max_size=8,
            )
        )
        attempts.append(AttemptTrace(f"r-a{n + 1}", at(start), at(t), steps))
    now = t + draw(st.integers(0, 5000))
    return attempts, records, now


@given(lives(), st.one_of(st.none(), st.integers(1, 64)))
def test_every_second_of_a_life_falls_in_exactly_one_bucket(life, gpus) -> None:
    attempts, records, now = life
    g = goodput.account(attempts, records, now_ms=at(now), gpus=gpus)
    assert all(seconds >= -1e-6 for seconds in g.seconds.values())
    assert len(g.interruptions) == max(0, len([a for a in attempts if a.start_ms]) - 1)
    for cost in g.interruptions:
        assert all(cost[part] >= -1e-6 for part in ("redone", "capacity", "settle", "restart"))
    starts = [a.start_ms for a in attempts] + [goodput.record_ms(r) for r in records]
    first = min(starts, default=at(now))
    assert g.total_s == pytest.approx((at(now) - first) / 1000, abs=1e-3)


def test_a_priced_stack_puts_the_runs_cost_beside_its_goodput() -> None:
    attempts = [AttemptTrace("r-a1", at(0), at(3600), {1: Step(1800.0)})]
    spent = goodput.account(attempts, [], now_ms=at(3600), gpus=16).as_json()

    outputs = stack_outputs(
        gpusPerNode=8, gpuNodeHourUsd=40.0, gpuNodeHourSource="cost.nodeHourUsd (stack config)"
    )
    priced = goodput.priced(spent, outputs)
    assert priced["cost_usd"] == 80.0 and priced["node_hours"] == 2.0  # 16 GPU-hours at $40/node-h
    lines = goodput.lines_of(priced)
    assert lines[0] == ("50% productive of 16.00 GPU-h = 2.00 node-h, $80.00 at $40 per node-hour")
    assert lines[2] == "price: cost.nodeHourUsd (stack config)"
    assert goodput.priced(spent, None)["cost_usd"] is None


def test_a_capacity_wait_is_priced_at_the_gpus_still_there_not_the_lost_nodes() -> None:
    # 2 nodes x 8 GPUs; one node preempted: for the 600 s wait the cluster has the other 8 (the
    # waiting record's `gpus`), which sit idle for the run; the lost node is nobody's bill.
    attempts = [
        AttemptTrace("r-a1", at(0), at(1000), {1: Step(900.0)}),
        AttemptTrace("r-a2", at(1620), at(2620), {2: Step(900.0)}),
    ]
    records = [
        rec(ev.SUBMITTED, 0),
        rec(ev.WAITING, 1010, gpus=8, gpus_needed=16),
        rec(ev.STILL_WAITING, 1300, gpus=8, gpus_needed=16),
        rec(ev.GPUS_BACK, 1610, gpus=16, gpus_needed=16),
        rec(ev.SUBMITTED, 1620),
    ]
    g = goodput.account(attempts, records, now_ms=at(2620), gpus=16)
    assert g.seconds["capacity"] == pytest.approx(600.0)
    hours = g.gpu_hours()
    assert hours["capacity"] == pytest.approx(8 * 600 / 3600)
    assert hours["restart"] == pytest.approx(16 * g.seconds["restart"] / 3600)
    # The interruption's price counts the same 8 GPUs for its capacity part.
    [cost] = g.as_json()["interruptions"]
    assert cost["gpu_hours"] == round((8 * 600 + 16 * (20 + 100)) / 3600, 3)


def test_a_wait_where_the_cluster_has_more_gpus_than_the_run_is_priced_at_the_run() -> None:
    attempts = [AttemptTrace("r-a1", at(100), at(200), {1: Step(50.0)})]
    records = [rec(ev.WAITING, 0, gpus=64, gpus_needed=8), rec(ev.GPUS_BACK, 90, gpus=64)]
    g = goodput.account(attempts, records, now_ms=at(200), gpus=8)
    assert g.gpu_hours()["capacity"] == pytest.approx(8 * 90 / 3600)


def test_a_capacity_wait_inside_an_attempt_is_capacity_even_under_a_redone_step() -> None:
    # a2 redoes step 5; the supervisor waited for GPUs from 1100 s to 1500 s while a2 was Ray's
    # live job (its driver held on, its step timer ran through the wait): those 400 s are
    # capacity, and the step is scaled into what is left of a2's wall time.
    attempts = [
        AttemptTrace("r-a1", at(0), at(1000), {n: Step(180.0) for n in range(1, 6)}),
        AttemptTrace("r-a2", at(1000), at(1600), {5: Step(600.0)}),
    ]
    records = [
        rec(ev.SUBMITTED, 0),
        rec(ev.SUBMITTED, 1000),
        rec(ev.WAITING, 1100, gpus=0),
        rec(ev.GPUS_BACK, 1500, gpus=8),
    ]
    g = goodput.account(attempts, records, now_ms=at(1600), gpus=8)
    assert g.seconds["capacity"] == pytest.approx(400.0)
    assert g.seconds["redone"] == pytest.approx(200.0)
    assert g.total_s == pytest.approx(1600.0)
    assert g.gpu_hours()["capacity"] == pytest.approx(0.0)  # no GPU was there to pay for
    [cost] = g.interruptions
    assert cost["capacity"] == pytest.approx(400.0) and cost["redone"] == pytest.approx(200.0)


def test_a_zero_gpu_run_tells_its_life_in_hours_and_its_gpu_hours_as_zero() -> None:
    attempts = [AttemptTrace("r-a1", at(0), at(120), {1: Step(60.0)})]
    as_json = goodput.account(attempts, [], now_ms=at(120), gpus=0).as_json()
    assert as_json["gpus"] == 0 and sum(as_json["gpu_hours"].values()) == 0.0
    assert goodput.lines_of(as_json)[0] == "50% productive of 2.00 min"


def test_each_attempts_start_up_runs_from_the_scale_up_request_to_its_first_step() -> None:
    # On demand: the run asks Ray's autoscaler at 2 s, a node boots and pulls the image until
    # 400 s, a1 is submitted at 405 s and spends 100 s loading before its 2 steps of 50 s.
    # Preempted; a2 goes 300 s after a1's end (a new node), loads 60 s, then a 40-s step.
    attempts = [
        AttemptTrace("r-a1", at(405), at(605), {1: Step(50.0), 2: Step(50.0)}),
        AttemptTrace("r-a2", at(905), at(1005), {3: Step(40.0)}),
        AttemptTrace("r-a3", at(1100), None),  # no step yet
    ]
    records = [
        rec(ev.ARMED, 0, fresh=True),
        rec(ev.GPUS_REQUESTED, 2),
        rec(ev.WAITING, 3, gpus=0, scaling_up=True),
        rec(ev.GPUS_BACK, 400, gpus=8),
        rec(ev.SUBMITTED, 405),
        rec(ev.WAITING, 610, gpus=0, scaling_up=True),
        rec(ev.SUBMITTED, 905),
        rec(ev.SUBMITTED, 1100),
    ]
    g = goodput.account(attempts, records, now_ms=at(1200), gpus=8)
    assert g.as_json()["startups"] == [
        {"submission_id": "r-a1", "startup_s": 503.0},  # 2 s -> 505 s
        {"submission_id": "r-a2", "startup_s": 360.0},  # a1's end 605 s -> 965 s
        {"submission_id": "r-a3", "startup_s": None},
    ]
    assert goodput.lines_of(g.as_json())[-1] == (
        "start-up (GPUs asked for to first step): r-a1 8.4 min, r-a2 6.0 min, r-a3 no step seen"
    )


def test_without_a_scale_up_request_the_start_up_runs_from_the_hand_off() -> None:
    attempts = [AttemptTrace("r-a1", at(10), at(100), {1: Step(30.0)})]
    g = goodput.account(attempts, [rec(ev.ARMED, 0, fresh=True)], now_ms=at(100), gpus=8)
    assert g.as_json()["startups"] == [{"submission_id": "r-a1", "startup_s": 70.0}]
    assert goodput.lines_of(g.as_json())[-1] == (
        "start-up (GPUs asked for to first step): r-a1 70 s"
    )
