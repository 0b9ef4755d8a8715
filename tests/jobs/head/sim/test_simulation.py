"""Supervision under sequences of faults, in the deterministic simulation.

The real Supervisor, RunStore, Rearmer and restart policy, in a simulated Ray and clock
(tests/jobs/head/sim/world.py). Invariants are checked after every world event: never two live
attempts of one run, never an attempt after the user's stop, the newest complete checkpoint never
pruned, the supervisor never dies of an error; and at the end the run succeeded unless the
user's stop was its last word. A failing schedule prints itself as Python that replays it.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.head import events as ev
from tests.jobs.head.sim.world import (
    GPUS_PER_NODE,
    NODES,
    Fault,
    Schedule,
    Violation,
    World,
    random_schedule,
    remove_tree,
    simulate,
    sweep_schedule,
)

# Seeds per run of the suite, swept in chunks that two workers share: `make test` and
# `make test-fast` sweep 5,000, `SIM_SCHEDULES=50000` for a long hunt.
SCHEDULES = int(os.environ.get("SIM_SCHEDULES", "5000"))
CHUNK = 250
SEED_BASE = int(os.environ.get("SIM_SEED_BASE", "0"))


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A tmpfs folder when there is one: the simulated trainer's checkpoints are real files."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        import tempfile

        d = Path(tempfile.mkdtemp(prefix="sim-", dir=shm))
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path


def _replay_hint(schedule: Schedule, why: str, history: list[str]) -> str:
    shape = (
        ("" if schedule.declare_gpus else ", no_gpus=True")
        + (", slow_submits=True" if schedule.slow_submits else "")
        + (", races=True" if schedule.races else "")
        + (", verl=True" if schedule.framework == "verl" else "")
        + (", flex=True" if schedule.node_max_run_s else "")
    )
    seeded = (
        f"simulate(random_schedule({schedule.seed}{shape}), DIR), i.e. "
        if schedule.from_seed
        else ""
    )
    return (
        f"{why}\nreplay with {seeded}simulate(SCHEDULE, DIR) where SCHEDULE is\n"
        f"{schedule.describe()}\nlast events:\n  " + "\n  ".join(history[-25:])
    )


def _run(schedule: Schedule, base: Path) -> World:
    holder: dict[str, World] = {}
    orig = World.__init__

    def keep(self: World, *a: object, **k: object) -> None:
        orig(self, *a, **k)
        holder["w"] = self

    World.__init__ = keep  # type: ignore[method-assign]
    try:
        return simulate(schedule, base)
    except Violation as e:
        w = holder.get("w")
        pytest.fail(_replay_hint(schedule, str(e), w.history if w else []))
    finally:
        World.__init__ = orig  # type: ignore[method-assign]


@pytest.fixture
def few_collections() -> Iterator[None]:
    """The test process's heap (Ray, Pulumi and every test module imported) frozen out of the
    cyclic collector, and young collections rarer, while a chunk runs: a schedule allocates
    thousands of short-lived records, and each full collection walked the whole heap."""
    threshold = gc.get_threshold()
    gc.freeze()  # no collect first: a full one of this heap costs more than it saves
    gc.set_threshold(100_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


@pytest.mark.simulation
@pytest.mark.parametrize("first", range(SEED_BASE, SEED_BASE + SCHEDULES, CHUNK))
def test_random_fault_schedules_keep_every_invariant(base, first, few_collections):
    """Seeded random schedules of preemptions (with stockouts of
    hours), API errors/timeouts/malformed answers/lost answers, SIGTERM and SIGKILL of the
    supervisor, re-armer outages, head losses, user stop and resume, torn leases and two
    re-armers at once; seeds `first` to `first + CHUNK - 1`."""
    last = min(first + CHUNK, SEED_BASE + SCHEDULES)
    started = time.perf_counter()
    for seed in range(first, last):
        _run(sweep_schedule(seed), base / str(seed))
        remove_tree(base / str(seed))
    print(f"{last - first} schedules in {time.perf_counter() - started:.1f} s")


def _events(world: World) -> list[dict]:
    return world.store().events()


def test_item1_a_stockout_of_hours_does_not_end_the_run(base):
    """A preemption followed by a 3-hour stockout. Before the fix the run gave
    up after 30 min (`wait_timeout`); now it waits and finishes."""
    world = _run(Schedule(seed=1, faults=[Fault(1000, "preempt", 3 * 3600)]), base)
    assert world.succeeded
    assert not [r for r in _events(world) if r["event"] == ev.GAVE_UP]


def test_a_capacity_waits_since_is_the_supervisors_clock(base):
    """The `waiting` record's `since` (and the message's) was read from the wall clock while its
    `t` came from the supervisor's: in the simulation the two were weeks apart, and a schedule
    did not replay the same record twice."""
    world = _run(Schedule(seed=1, faults=[Fault(1000, "preempt", 3 * 3600)]), base)
    [first, *_] = [r for r in _events(world) if r["event"] == ev.WAITING]
    assert first["since"] == first["t"]
    assert f"since {first['t']} " in first["message"]


def test_item1_only_a_deadline_the_user_set_ends_a_capacity_wait(base):
    """With `capacity_deadline_s` set, the same stockout ends the run, by the
    reason `deadline` (the old 1800 s default reproduces the old failure)."""
    schedule = Schedule(seed=1, faults=[Fault(1000, "preempt", 3 * 3600)], capacity_deadline_s=1800)
    world = _run(schedule, base)  # an end the user set: accepted by the final check
    assert not world.succeeded
    assert ev.outcome(_events(world))["reason"] == "deadline"


def test_item2_resume_after_the_run_ended_continues_it(base):
    """`submit --resume` after the run ended (here: a user stop) starts a new
    life; before, the new supervisor re-adopted the ended attempt, judged it again and exited
    without submitting anything."""
    world = _run(Schedule(seed=2, faults=[Fault(1000, "stop"), Fault(2000, "resume")]), base)
    assert world.succeeded
    assert len(world.attempts_seen) == 2


def test_item3_an_error_at_re_arm_never_starts_a_second_attempt(base):
    """The supervisor is killed while its attempt runs; the re-armed one's
    first status query of that attempt gets HTTP 500. Before the fix it took the attempt for
    lost with the head and submitted the next one beside it (two trainers, one checkpoint dir)."""
    world = _run(
        Schedule(
            seed=3,
            faults=[Fault(1000, "sigkill"), Fault(1001, "api", 1, "500@get_job_status")],
        ),
        base,
    )
    assert world.succeeded
    assert world.attempts_seen == {"sim-a1"}


def test_item4_sigterm_without_a_stop_request_leaves_the_run_re_armable(base):
    """A SIGTERM that is not `rl-jobs stop` (a head pod deleted by an upgrade)
    used to end the run STOPPED for good; now it is re-armed and adopts its attempt."""
    world = _run(Schedule(seed=4, faults=[Fault(1000, "sigterm")]), base)
    assert world.succeeded
    kinds = [r["event"] for r in _events(world)]
    assert ev.INTERRUPTED in kinds and ev.ADOPTED in kinds and ev.STOPPED not in kinds


def test_item4_a_user_stop_is_final_and_wins(base):
    """A user stop is final ("stop always wins"): the stop request is on the
    record, so the SIGTERM that follows ends the run and the re-armer never takes it again."""
    world = _run(Schedule(seed=5, faults=[Fault(1000, "stop")]), base)
    assert not world.succeeded
    recs = _events(world)
    assert ev.outcome(recs)["event"] == ev.STOPPED
    assert not [r for r in recs if r["event"] == ev.REARMED]


def test_item11_every_attempt_reserves_what_the_run_asked_also_after_a_re_arm(base):
    """`run --gpus/--cpus/--resource` with --max-restarts submitted its
    attempts without them (the hand-off spec had no place for them; the CLI then refused
    --cpus and --resource outright). The world fails any attempt whose reservations differ."""
    world = _run(
        Schedule(
            seed=11,
            faults=[Fault(1000, "preempt", 60), Fault(2500, "sigkill"), Fault(3000, "preempt", 60)],
            reserve_gpus=16.0,
        ),
        base,
    )
    assert world.succeeded and len(world.attempts_seen) >= 3
    assert [r for r in _events(world) if r["event"] == ev.REARMED]
    assert all(
        j.reservations == {"entrypoint_num_gpus": 16.0}
        for j in world.jobs.values()
        if j.kind != "supervisor"
    )


def test_item5_a_lease_file_never_written_expires(base):
    """A taker killed between the O_EXCL create of the next lease and its
    write left an empty lease that was "alive" forever: the supervisor lost the run to it, and
    after the next preemption nobody restarted the run. Now it expires after UNWRITTEN_TTL_S."""
    world = _run(
        Schedule(seed=6, faults=[Fault(1000, "torn_lease"), Fault(1500, "preempt", 60)]), base
    )
    assert world.succeeded
    assert [r for r in _events(world) if r["event"] == ev.REARMED]


def test_item6_two_transient_failures_inside_one_save_period_do_not_end_the_run(base):
    """Two failures with no node lost, the second after the attempt trained
    two steps but before its next checkpoint. The crash rule counted checkpoints only, so the
    run gave up as a "crash"; a completed training step is progress."""
    world = _run(
        Schedule(seed=7, faults=[Fault(1000, "transient"), Fault(1800, "transient")]), base
    )
    assert world.succeeded
    assert not [r for r in _events(world) if r["event"] == ev.GAVE_UP]


def test_seed_309_a_supervisor_killed_before_it_took_the_run_leaves_it_re_armable(base):
    """Found by the simulation (seed 309): the supervisor's first Jobs API answer is malformed,
    and it is SIGKILLed during the backoff. It asked Ray before taking the lease and writing
    the spec, so the run had no spec on the runs root and the re-armer never saw it. The lease
    and spec now come first."""
    assert _run(random_schedule(309), base).succeeded


def test_seed_670_a_resumed_run_is_re_armed_with_its_new_spec(base):
    """Found by the simulation (seed 670): stop, `submit --resume` (first attempt 2), then the
    resumed supervisor is lost. spec.json was written once, so the re-armed supervisor took
    attempt 1's spec, "resubmitted" the stopped a1 and gave up. A new hand-off now replaces it."""
    assert _run(random_schedule(670), base).succeeded


def test_seed_169_an_attempt_whose_submit_answer_was_lost_is_not_pruned_under(base):
    """Found by the simulation (seeds 169 and 244): the submit of attempt 3 reached Ray but its
    answer was lost, and the retry got a 500 (or a malformed answer). After the backoff the
    supervisor pruned "between attempts" (taking the running attempt's `tmp_step_15` save from
    under it) and counted the preemption a second time. It now asks Ray whether the attempt
    it is about to submit exists: if so it watches it, and nothing is pruned or counted again."""
    world = _run(random_schedule(169), base)
    assert world.succeeded
    used = [r.get("preemptions_used") for r in _events(world) if r["event"] == ev.SUBMITTED]
    assert used == sorted(used) and max(used) <= sum(
        1 for r in _events(world) if r["event"] == ev.PREEMPTED
    )


def test_seed_244_a_lost_submit_answer_then_a_malformed_one(base):
    """Found by the simulation (seed 244): as seed 169, after a 3-hour capacity wait, with a
    malformed answer to the retried submit."""
    assert _run(random_schedule(244), base).succeeded


def test_seed_487_an_attempt_submitted_unbeknown_is_judged_from_its_own_start(base):
    """Found by the simulation (seed 487): attempt 3's submit answer was lost, the retry got a
    500, and attempt 3 died with a preempted node while the supervisor backed off; the re-armed
    supervisor then "submitted" attempt 3 (a duplicate id, taken as new), judged its failure from
    that moment (no node lost since) and, after one more transient failure, gave the run up as a
    crash. An attempt found already in Ray is now adopted with Ray's own start time, so the node
    lost during it makes its failure a preemption."""
    world = _run(random_schedule(487), base)
    assert world.succeeded
    assert not [r for r in _events(world) if r["event"] == ev.GAVE_UP]


def test_item12_a_node_the_attempt_did_not_use_does_not_make_its_failure_a_preemption(base):
    """A spare GPU node (hosting none of the run's workers) is lost, then
    the attempt fails on its own. Any dead GPU node counted, so the failure was called a
    preemption (spending the preemption budget, never the crash rule); only the nodes that
    hosted the attempt's actors and tasks count now."""
    world = _run(
        Schedule(
            seed=12, spare_nodes=1, faults=[Fault(1000, "spare_lost"), Fault(1100, "transient")]
        ),
        base,
    )
    assert world.succeeded
    recs = _events(world)
    assert not [r for r in recs if r["event"] == ev.PREEMPTED]
    assert [r["restarts_used"] for r in recs if r["event"] == ev.SUBMITTED] == [0, 1]


def test_item0_a_run_that_declares_no_gpus_is_preempted_not_crashed(base):
    """`run` without --gpus (the spec needs 0 GPUs) whose workers sit on a
    GPU node that is lost. Judged at once, before Ray had marked the node dead, the failure was
    a crash; the judgement now waits the settle time for every failure, and counts the death of
    a node that hosted the attempt's workers."""
    world = _run(
        Schedule(seed=10, declare_gpus=False, faults=[Fault(1066, "preempt", 60)]),
        base,
    )
    assert world.succeeded
    recs = _events(world)
    preempted = [r["submission_id"] for r in recs if r["event"] == ev.PREEMPTED]
    assert preempted[:1] == ["sim-a1"]  # before: a1 a restart, a2 (never on that node) preempted
    assert [r["restarts_used"] for r in recs if r["event"] == ev.SUBMITTED][:2] == [0, 0]


def test_item10_a_hang_is_stopped_after_a_multiple_of_the_runs_own_step_time(base):
    """A run making a step every 2 min (saving in about a minute) hangs; its
    stall timeout is 7200 s. It used to sit for the whole 7200 s on every GPU; once the attempt
    showed its rhythm (steps and a save) the watchdog stops it after 10 x its median step
    (bounded below by 900 s and 2 x its longest save, above by the configured timeout)."""
    world = _run(Schedule(seed=10, stall_timeout_s=7200, faults=[Fault(3000, "hang")]), base)
    assert world.succeeded
    stalled = [r for r in _events(world) if r["event"] == ev.STALLED]
    assert len(stalled) == 1
    assert 1200 <= stalled[0]["quiet_s"] < 1200 + 2 * 120  # 10 x 120 s, seen at 2-min polls
    assert "from the run's own step and save times" in stalled[0]["message"]


def test_item10_a_long_load_keeps_the_configured_timeout(base):
    """Before the attempt's first steps and save (its model
    load) the configured timeout applies: a hang there is stopped after 7200 s, not sooner."""
    world = _run(Schedule(seed=10, stall_timeout_s=7200, faults=[Fault(100, "hang")]), base)
    stalled = [r for r in _events(world) if r["event"] == ev.STALLED]
    assert world.succeeded and len(stalled) == 1 and stalled[0]["quiet_s"] >= 7200


def test_seed_171_a_re_armed_supervisor_restarts_an_attempt_the_watchdog_stopped(base):
    """Found by the simulation (seed 171): the stall watchdog stopped a hung attempt (Ray says
    STOPPED, the record says STALLED), a node was lost, and the supervisor was SIGTERMed during
    the capacity wait. The re-armed one adopted the attempt by Ray's status, STOPPED, and gave
    the run up ("a stopped attempt is never restarted"). The recorded end now wins."""
    world = _run(random_schedule(171), base)
    assert world.succeeded


def test_seed_386_a_stall_is_not_the_first_of_a_crashs_two_failures(base):
    """Found by the simulation (seed 386): an attempt hung during its load and was stopped by
    the watchdog; after a preemption, the next attempt failed during its load too, and the run
    was given up as a crash (two failures in a row without progress). A stall says nothing
    about the code (an NCCL wait on a lost peer); it spends a restart, and no longer counts as
    one of a crash's two tries (docs/supervision.md: "a stall is not a crash")."""
    world = _run(random_schedule(386), base)
    assert world.succeeded


def test_an_attempt_that_has_not_started_is_never_stalled(base, monkeypatch):
    """Found by the suites run side by side (test_survival's stall test gave up on a loaded
    machine): the stall clock ran while the attempt was PENDING, so an attempt whose driver
    waits longer than the stall timeout to start (GPU nodes scaling up and pulling a 20 GiB
    image, a runtime env install) was stopped as stalled before it could print a line. Here
    every driver takes 9000 s to start against a 7200 s stall timeout."""
    from tests.jobs.head.sim import world as sim_world

    monkeypatch.setattr(sim_world, "DRIVER_START_S", 9000.0)
    world = _run(Schedule(seed=10, stall_timeout_s=7200, faults=[]), base)
    assert world.succeeded
    assert [r for r in _events(world) if r["event"] == ev.STALLED] == []


def test_a_malformed_answer_while_an_attempts_end_is_read_loses_neither_its_record_nor_charge(
    base,
):
    """An API error in the middle of recording an attempt's end (here: the dashboard answers
    `get_job_info` with something that is not JSON, twice) is retried from the attempt's end:
    the next attempt is submitted only after the ended one's record, and the interruption is
    charged as a preemption."""
    world = _run(
        Schedule(
            seed=13,
            faults=[Fault(1000, "preempt", 60), Fault(1005, "api", 3, "malformed@get_job_info")],
        ),
        base,
    )
    assert world.succeeded
    recs = _events(world)
    submitted = [r for r in recs if r["event"] == ev.SUBMITTED]
    ended = [r for r in recs if r["event"] == ev.ATTEMPT_ENDED]
    assert [r["submission_id"] for r in ended] == [r["submission_id"] for r in submitted]
    assert [r for r in recs if r["event"] == ev.PREEMPTED]


def test_seed_1010_an_api_error_after_the_watchdogs_stop_keeps_the_attempt_stalled(base):
    """Found by the simulation (seed 1010): the watchdog stopped a hung attempt, and the
    dashboard answered the next status query with something that was not JSON. The loop was
    retried, saw the attempt STOPPED in Ray, and gave the run up ("a stopped attempt is never
    restarted"); the supervisor now remembers whose stop it was."""
    world = _run(random_schedule(1010), base)
    assert world.succeeded
    recs = _events(world)
    assert [r["status"] for r in recs if r["event"] == ev.ATTEMPT_ENDED][0] == "STALLED"


def test_seed_558_gpus_held_by_our_own_unrecorded_attempt_are_not_waited_for(base):
    """Found by the simulation (seed 558), once the supervisor waits for free GPUs:
    its submit's answer was lost and the retry then met a malformed answer, so the attempt ran
    unrecorded, holding every GPU, while the supervisor waited for them to be freed, for ever.
    A busy cluster is now first checked for our own next attempt, which is adopted."""
    world = _run(random_schedule(558), base)
    assert world.succeeded
    recs = _events(world)
    assert any("its answer was lost" in r["message"] for r in recs if r["event"] == ev.SUBMITTED)


def test_seed_543_a_head_lost_again_while_down_comes_back_once(base):
    """The simulated world itself (seed 543): a second head loss during the first one scheduled
    two returns, and the later one wiped the live supervisor's cluster under it."""
    world = _run(random_schedule(543), base)
    assert world.succeeded


def test_seed_2143_a_sigterm_before_the_run_was_taken_leaves_it_re_armable(base):
    """Found by the simulation (seed 2143): a SIGTERM (not a user stop) one second after the
    hand-off, before the supervisor had written the run's spec and lease. It recorded "the run
    will be re-armed", but the re-armer had no spec to find and the run never started. The run
    is now taken first, then left to the re-armer."""
    world = _run(random_schedule(2143), base)
    assert world.succeeded
    assert [r for r in _events(world) if r["event"] == ev.REARMED]


def test_seed_2968_a_supervisor_killed_at_its_first_instruction_fails_the_hand_off(base):
    """Found by the simulation (seed 2968), in the world: a supervisor SIGKILLed before its
    first instruction stayed PENDING for ever. Ray ends such a job FAILED, and the CLI, which
    waits for the `armed` record, fails the command; the user submits again."""
    world = _run(random_schedule(2968), base)
    assert world.succeeded
    assert any("hand-off to sim-s1 failed" in line for line in world.history)


def test_seed_3696_a_resume_waits_out_a_torn_lease_instead_of_leaving(base):
    """Found by the simulation (seed 3696): after a user stop, a taker died between creating
    the next lease and writing it; the user's resume then found that lease "held", left at
    once, and the re-armer later re-armed the run with the previous life's spec, which re-adopted
    the stopped attempt and gave up. A resume now waits until such a lease expires."""
    world = _run(random_schedule(3696), base)
    assert world.succeeded
    left = [r for r in _events(world) if r["event"] == ev.LEFT]
    assert not [r for r in left if r.get("reason") == "another_supervisor"]


def test_seed_4223_a_resume_waits_out_the_lease_of_a_supervisor_ray_has_ended(base):
    """Found by the simulation (seed 4223): the supervisor was SIGKILLed, the user stopped the
    run and resumed it within the dead supervisor's lease time. The resume saw the lease held
    and left; the re-armer then re-armed the previous life's spec and gave the run up on its
    stopped attempt. A holder Ray has ended no longer keeps a hand-off away."""
    world = _run(random_schedule(4223), base)
    assert world.succeeded


@pytest.mark.parametrize("stockout_s", [600, 3 * 3600, 26 * 3600])
def test_a_run_without_gpus_waits_for_the_gpus_its_attempt_used_after_a_preemption(
    base, stockout_s
):
    """`run` without --gpus (the driver needs none, its workers sit on GPU
    nodes) is preempted, then the zone has no stock for 10 min, 3 h or 26 h. Its next attempts
    were submitted at once (0 GPUs needed), failed at placement, and the crash rule ended the
    run ~4 min in. The supervisor now waits for the GPUs the previous attempt ran on."""
    world = _run(
        Schedule(seed=41, declare_gpus=False, faults=[Fault(1000, "preempt", stockout_s)]),
        base,
    )
    assert world.succeeded
    recs = _events(world)
    assert not [r for r in recs if r["event"] == ev.GAVE_UP]
    waits = [r for r in recs if r["event"] == ev.WAITING]
    assert waits and waits[0]["gpus_needed"] == NODES * GPUS_PER_NODE


@pytest.mark.parametrize("seed", [1505, 1654, 1710])
def test_transient_faults_during_two_loads_are_not_a_crash(base, seed):
    """Seeds 1505, 1654 and 1710 of the sweep: two transient faults (NCCL
    timeouts of different collectives) each during a model load, once after 20 steps of
    progress. The simulation accepted the "crash at start-up" that followed; it now accepts
    only success, a user stop, a spent budget or the user's deadline, and the supervisor calls
    two failures a crash only when they end alike (same exit code, same last exception)."""
    world = _run(random_schedule(seed), base)
    assert world.succeeded
    assert not [r for r in _events(world) if r.get("reason") == "crash"]


def test_the_sweep_runs_runs_without_gpus_after_a_preemption(base):
    """Runs that declare no GPUs, preempted and then out of stock, are in the random sweep (a
    quarter of its seeds), with the faults of a random schedule, preemptions and stockouts of
    hours included."""
    shapes = [sweep_schedule(seed) for seed in range(200)]
    no_gpus = [s for s in shapes if not s.declare_gpus]
    assert 30 <= len(no_gpus) <= 70
    assert any(f.kind == "preempt" and f.arg >= 3 * 3600 for s in no_gpus for f in s.faults)


def test_a_stop_during_a_slow_submit_leaves_no_attempt_running(base):
    """The supervisor's submit of attempt 2 is answered 600 s late (Ray
    takes the job then) and the user stops the run meanwhile: Ray SIGKILLs the supervisor 3 s
    after its SIGTERM, still waiting for the answer, and the CLI stops the attempts it lists,
    before attempt 2 exists. Nothing stopped attempt 2 when it came: the run was STOPPED on
    the record with a trainer running. The re-armer, ending the stopped run, now stops it."""
    world = _run(
        Schedule(
            seed=42,
            faults=[
                Fault(1000, "transient"),
                Fault(1000, "api", 1, "slow@submit_job"),
                Fault(1300, "stop"),
            ],
        ),
        base,
    )
    assert world.attempts_seen == {"sim-a1", "sim-a2"}
    assert ev.outcome(_events(world))["event"] == ev.STOPPED


def test_every_attempt_of_a_run_logs_to_one_wandb_run_and_a_new_run_to_another(base):
    """No W&B run id was set anywhere, so a run preempted five times was six
    W&B runs with overlapping steps. Every attempt now gets the run's one id (kept in the run's
    record: through a killed supervisor, a head loss, a stop and a resume), and another run
    another id."""
    faults = [
        Fault(1000, "preempt", 60),
        Fault(2000, "sigkill"),
        Fault(3000, "head_loss", 300),
        Fault(5000, "stop"),
        Fault(5200, "resume"),
    ]
    world = _run(Schedule(seed=8, faults=faults), base / "one")
    attempts = [j for j in world.jobs.values() if j.kind != "supervisor" and j.kind != "stop"]
    ids = {j.runtime_env.get("env_vars", {}).get("WANDB_RUN_ID") for j in attempts}
    assert len(attempts) >= 2 and len(ids) == 1 and None not in ids
    recs = _events(world)
    assert {r.get("wandb_run_id") for r in recs if r["event"] == ev.SUBMITTED} == ids
    assert all(j.runtime_env["env_vars"]["WANDB_RESUME"] == "allow" for j in attempts)
    other = _run(Schedule(seed=8, faults=[]), base / "two")
    [other_id] = {
        j.runtime_env["env_vars"]["WANDB_RUN_ID"]
        for j in other.jobs.values()
        if j.kind != "supervisor"
    }
    assert other_id not in ids


@pytest.mark.parametrize("seed", [21, 22, 23, 24])
def test_two_heads_racing_for_one_lapsed_lease_drive_the_run_from_one(base, seed):
    """The head is lost and a second head comes up on the same runs root;
    the two re-armers race between the lease's read and its create (which goes first is the
    seed's), each with its own job table, so Ray's refusal of a duplicate supervisor id hides
    nothing. One wins; the run finishes driven from one head."""
    world = _run(Schedule(seed=seed, faults=[Fault(1000, "two_heads", 300)]), base)
    assert world.succeeded
    assert any("race:" in line for line in world.history)
    assert sum("re-armer" in line and "submits" in line for line in world.history) == 1


@pytest.mark.parametrize("seed", [1286, 3020])
def test_a_resume_on_one_head_racing_the_other_heads_rearmer_is_driven_from_one(base, seed):
    """Sweep seeds 1286 and 3020: both heads up on one runs root, and head B's re-armer takes the
    run between a resume's read of the lease and its create on head A. The resume's supervisor
    asks A's Ray about B's supervisor (404 there); the lease names B's head, so that is no
    sign it is gone: the resume leaves the run to B, not waits for the lease and drives it
    beside B (an attempt on each head, before the lease named its head)."""
    world = _run(sweep_schedule(seed), base)
    assert any("race:" in line for line in world.history)
    assert any("head B won the run" in line for line in world.history)


def test_a_failing_seed_prints_a_schedule_that_replays(base, monkeypatch):
    """The mutation set's promise (tests/jobs/head/sim/mutants/): with O_EXCL removed from the
    lease's create, the sweep's seed 4 (a two-heads race) fails, and the schedule the failure prints,
    run again as printed, fails the same way."""
    import os as _os

    from jobs.head.files import Files

    monkeypatch.setattr(
        Files, "create_exclusive", lambda self, path: self.create(path, _os.O_WRONLY | _os.O_CREAT)
    )
    with pytest.raises(pytest.fail.Exception) as failed:
        _run(sweep_schedule(4), base / "first")  # a two-heads race (the mutants' first kill)
    text = str(failed.value)
    printed = text.split("SCHEDULE is\n", 1)[1].split("\nlast events:", 1)[0]
    replayed = eval(printed, {"Schedule": Schedule, "Fault": Fault})
    with pytest.raises(Violation) as again:
        simulate(replayed, base / "again")
    assert str(again.value) == text.split("\n", 1)[0]


def test_a_supervisor_that_renews_a_lease_taken_over_fails_the_schedule(base, monkeypatch):
    """The sweep's check of the lease from the holder's side: a renewal that ignores a newer
    generation (the planted bug `mutants/renew_ignores_a_newer_lease.patch`) lets a supervisor
    whose run was taken over go on driving it beside the new holder. Sweep seed 2 (a torn lease
    while the supervisor runs) fails at that renewal."""
    from jobs.head.run_store import Lease, RunStore

    def renew(self: RunStore, lease: Lease, ttl_s: float | None = None) -> Lease:
        renewed = Lease(lease.holder, lease.gen, self.clock.time(), ttl_s or lease.ttl_s)
        self._write(f"lease.{lease.gen}", self._lease_dict(renewed))
        return renewed

    _run(sweep_schedule(2), base / "sound")
    monkeypatch.setattr(RunStore, "renew", renew)
    with pytest.raises(pytest.fail.Exception, match=r"renewed lease 1 of the run .* after lease 2"):
        _run(sweep_schedule(2), base / "planted")


def test_seed_1025_an_attempt_whose_submit_answer_was_lost_is_adopted_not_waited_beside(base):
    """A submit's answer lost, then errors; the flex-start nodes the attempt ran on were too
    close to their end to count as capacity: the supervisor recorded a wait for GPUs beside its
    own running attempt for 38 min, unwatched (and goodput booked that time as a wait)."""
    world = _run(sweep_schedule(1025), base)
    assert world.succeeded
    recs = _events(world)
    a2 = next(r for r in recs if r["event"] == ev.SUBMITTED and r["attempt"] == 2)
    ended = next(r for r in recs if r["event"] == ev.ATTEMPT_ENDED and r["attempt"] == 2)
    between = recs[recs.index(a2) : recs.index(ended)]
    assert not [r for r in between if r["event"] == ev.WAITING], between
