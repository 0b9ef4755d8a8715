"""The restart rules: never after a stop, wait for GPUs (bounded) and a stable cluster, a crash is
tried at most twice, a preemption spends its own budget and never counts as a crash."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from jobs.head.restart_policy import Action, Reason, Situation, decide, is_crash

situations = st.builds(
    Situation,
    ended=st.sampled_from([None, "SUCCEEDED", "FAILED", "STOPPED", "STALLED"]),
    restarts_used=st.integers(0, 10),
    max_restarts=st.integers(0, 10),
    gpus_needed=st.integers(0, 64),
    gpus_at_end=st.integers(0, 64).map(float),
    gpus_now=st.integers(0, 64).map(float),
    progressed=st.sampled_from([None, True, False]),
    stop_requested=st.booleans(),
    waited_s=st.floats(0, 4000),
    max_wait_s=st.floats(0, 4000),
    preempted=st.booleans(),
    preemptions_used=st.integers(0, 10),
    max_preemptions=st.integers(0, 10),
    stable_s=st.floats(0, 200),
    settle_s=st.floats(0, 120),
    same_failure=st.sampled_from([None, True, False]),
)


@given(situations)
def test_nothing_is_submitted_after_a_stop_or_a_stopped_attempt(s):
    if s.stop_requested or s.ended == "STOPPED":
        assert decide(s).action == Action.GIVE_UP


@given(situations)
def test_a_submit_needs_the_gpus_and_a_restart_left(s):
    d = decide(s)
    if d.action == Action.SUBMIT:
        assert s.gpus_now >= s.gpus_needed
        if s.ended is not None and not s.preempted:
            assert s.restarts_used < s.max_restarts
        if s.ended is not None and s.preempted:
            assert s.preemptions_used < s.max_preemptions
        assert not is_crash(s)


@given(situations)
def test_after_a_failure_a_gpu_run_is_resubmitted_only_on_settled_capacity(s):
    if decide(s).action == Action.SUBMIT and s.ended is not None and s.gpus_needed > 0:
        assert s.stable_s >= s.settle_s


@given(situations)
def test_a_preemption_is_never_a_crash_and_never_spends_a_restart(s):
    if s.preempted:
        assert not is_crash(s)
        assert decide(s).reason not in (Reason.CRASH, Reason.RESTARTS_EXHAUSTED)


@given(situations)
def test_waiting_is_only_for_missing_gpus_and_ends_only_at_a_user_deadline(s):
    """Waiting for capacity alone never ends a run; only a deadline the user
    set (max_wait_s > 0) does."""
    d = decide(s)
    if d.action == Action.WAIT and d.reason == Reason.NO_CAPACITY:
        assert s.gpus_now < s.gpus_needed
        assert s.max_wait_s == 0 or s.waited_s < s.max_wait_s
    if d.action == Action.WAIT and d.reason == Reason.SETTLING:
        # A run that declares no GPUs settles only after a failure, before it is judged (its
        # workers may have been on a lost node); it has no capacity to settle.
        assert s.stable_s < s.settle_s
        assert s.gpus_needed > 0 or s.ended in ("FAILED", "STALLED")
    if d.reason == Reason.DEADLINE:
        assert s.max_wait_s > 0 and s.waited_s >= s.max_wait_s
        assert str(s.gpus_needed) in d.message


@given(situations)
def test_success_finishes_unless_stopped(s):
    if s.ended == "SUCCEEDED" and not s.stop_requested:
        assert decide(s).action == Action.FINISH


def _simulate(
    max_restarts: int, gpus_needed: int, progress: list[bool], gpus_after_failure: list[float]
) -> int:
    """Drive the rules as the supervisor does through attempts that all fail; return how many
    attempts were submitted. Attempt i writes a checkpoint when progress[i] and leaves
    gpus_after_failure[i] GPUs; a wait ends when the GPUs come back."""
    submitted, restarts = 1, 0
    while True:
        i = submitted - 1
        gpus = gpus_after_failure[i % len(gpus_after_failure)]
        s = Situation(
            ended="FAILED",
            restarts_used=restarts,
            max_restarts=max_restarts,
            gpus_needed=gpus_needed,
            gpus_at_end=gpus,
            gpus_now=gpus,
            progressed=None if submitted == 1 else progress[i % len(progress)],
            same_failure=None if submitted == 1 else True,  # a bad config fails alike
        )
        d = decide(s)
        if d.action == Action.WAIT:
            d = decide(Situation(**{**s.__dict__, "gpus_now": float(gpus_needed), "waited_s": 60}))
        if d.action != Action.SUBMIT:
            return submitted
        submitted += 1
        restarts += 1


@given(st.integers(0, 20), st.integers(0, 16))
def test_a_crash_with_every_gpu_present_is_tried_at_most_twice(max_restarts, gpus_needed):
    assert _simulate(max_restarts, gpus_needed, [False], [float(gpus_needed)]) == min(
        2, max_restarts + 1
    )


@given(
    st.integers(0, 20),
    st.integers(1, 16),
    st.lists(st.booleans(), min_size=1, max_size=8),
    st.lists(st.integers(0, 16).map(float), min_size=1, max_size=8),
)
def test_attempts_never_exceed_max_restarts_plus_one(max_restarts, gpus_needed, progress, gpus):
    assert 1 <= _simulate(max_restarts, gpus_needed, progress, gpus) <= max_restarts + 1


@given(st.integers(1, 20), st.integers(1, 16))
def test_preemptions_and_progress_use_every_restart(max_restarts, gpus_needed):
    # Every failure either lost GPUs (preemption) or followed a new checkpoint: not a crash.
    assert _simulate(max_restarts, gpus_needed, [True], [0.0]) == max_restarts + 1
    assert _simulate(max_restarts, gpus_needed, [True], [float(gpus_needed)]) == max_restarts + 1


def test_the_first_failure_is_retried_even_with_every_gpu_present():
    s = Situation(
        ended="FAILED",
        restarts_used=0,
        max_restarts=3,
        gpus_needed=8,
        gpus_at_end=8,
        gpus_now=8,
        progressed=None,
    )
    assert decide(s).action == Action.SUBMIT


def test_a_crash_says_why_and_is_not_retried():
    s = Situation(
        ended="FAILED",
        restarts_used=1,
        max_restarts=5,
        gpus_needed=2,
        gpus_at_end=2,
        gpus_now=2,
        progressed=False,
        same_failure=True,
    )
    d = decide(s)
    assert (d.action, d.reason) == (Action.GIVE_UP, Reason.CRASH)
    assert "every GPU present" in d.message and "no new checkpoint" in d.message


def test_a_stockout_of_hours_never_ends_a_run_without_a_deadline():
    """The old 30 min wait_timeout ended a 20-hour run in a spot stockout."""
    s = Situation(
        ended="FAILED",
        restarts_used=0,
        max_restarts=1,
        gpus_needed=16,
        gpus_at_end=8.0,
        gpus_now=8.0,
        progressed=None,
        preempted=True,
        waited_s=6 * 3600.0,
    )
    assert (decide(s).action, decide(s).reason) == (Action.WAIT, Reason.NO_CAPACITY)


def test_missing_gpus_wait_then_give_up_after_the_users_deadline():
    base = dict(
        ended="FAILED",
        restarts_used=0,
        max_restarts=1,
        gpus_needed=2,
        gpus_at_end=0.0,
        gpus_now=0.0,
        progressed=None,
        max_wait_s=1800.0,
    )
    assert decide(Situation(**base, waited_s=10)).action == Action.WAIT
    late = decide(Situation(**base, waited_s=1800))
    assert (late.action, late.reason) == (Action.GIVE_UP, Reason.DEADLINE)
    back = decide(Situation(**{**base, "gpus_now": 2.0}, waited_s=100))
    assert back.action == Action.SUBMIT


def _run(max_restarts: int, ends: list[tuple[bool, bool]], max_preemptions: int = 100) -> int:
    """Attempts submitted when attempt i fails (preempted, checkpointed) = ends[i], the GPUs
    always back and settled, as the supervisor keeps its counters."""
    restarts = preemptions = 0
    baseline_seen = False
    since_failure = False  # a new checkpoint since the last failure that was not a preemption
    for i, (preempted, checkpointed) in enumerate(ends):
        since_failure = since_failure or checkpointed
        s = Situation(
            ended="FAILED",
            restarts_used=restarts,
            max_restarts=max_restarts,
            gpus_needed=2,
            gpus_at_end=2.0,
            gpus_now=2.0,
            progressed=since_failure if baseline_seen else None,
            same_failure=True if baseline_seen else None,
            preempted=preempted,
            preemptions_used=preemptions,
            max_preemptions=max_preemptions,
        )
        if decide(s).action != Action.SUBMIT:
            return i + 1
        if preempted:
            preemptions += 1
        else:
            restarts += 1
            baseline_seen, since_failure = True, False
    return len(ends) + 1


def test_three_preemptions_in_a_row_need_no_restart():
    assert _run(0, [(True, False)] * 3) == 4


def test_preemptions_between_crashes_do_not_make_a_crash_count_twice_or_less():
    # crash, preemption, preemption, crash: the second crash ends it (2 crash attempts), and the
    # preemptions in between neither end it early nor count as crash attempts.
    assert (
        _run(5, [(False, False), (True, False), (True, False), (False, False), (False, False)]) == 4
    )


def test_preemptions_have_their_own_budget():
    s = Situation(
        ended="FAILED",
        restarts_used=0,
        max_restarts=5,
        gpus_needed=2,
        gpus_at_end=2,
        gpus_now=2,
        progressed=False,
        preempted=True,
        preemptions_used=3,
        max_preemptions=3,
    )
    d = decide(s)
    assert (d.action, d.reason) == (Action.GIVE_UP, Reason.PREEMPTIONS_EXHAUSTED)


def test_a_stall_is_restarted_but_spends_a_restart_and_is_not_a_crash():
    s = Situation(
        ended="STALLED",
        restarts_used=0,
        max_restarts=1,
        gpus_needed=0,
        gpus_at_end=0,
        gpus_now=0,
        progressed=False,
    )
    assert decide(s).action == Action.SUBMIT
    assert (
        decide(Situation(**{**s.__dict__, "restarts_used": 1})).reason == Reason.RESTARTS_EXHAUSTED
    )


def test_a_run_without_gpus_is_judged_after_the_settle_too():
    """A run that declares no GPUs (its workers on GPU nodes all the same) was
    judged at once, before Ray marked its lost node dead, and called a crash. Its failure now
    waits the settle time like any other; then it is submitted at once (no capacity to wait
    for)."""
    s = Situation(
        ended="FAILED",
        restarts_used=0,
        max_restarts=1,
        gpus_needed=0,
        gpus_at_end=0,
        gpus_now=0,
        progressed=None,
        stable_s=0.0,
        settle_s=60.0,
    )
    assert decide(s).reason == Reason.SETTLING
    assert decide(Situation(**{**s.__dict__, "stable_s": 60.0})).action == Action.SUBMIT
    gpu = Situation(**{**s.__dict__, "gpus_needed": 2, "gpus_at_end": 2.0, "gpus_now": 2.0})
    assert decide(gpu).reason == Reason.SETTLING


def _ended(**kw: object) -> Situation:
    base = dict(
        ended="FAILED",
        restarts_used=0,
        max_restarts=3,
        gpus_needed=16,
        gpus_at_end=16.0,
        gpus_now=16.0,
        progressed=True,
        stable_s=5.0,
        settle_s=60.0,
    )
    return Situation(**{**base, **kw})  # type: ignore[arg-type]


def test_a_preempted_attempts_successor_starts_once_its_gpus_are_free_on_answering_nodes():
    """Settle by probing: no fixed settle after a preemption."""
    s = _ended(preempted=True, gpus_free=16.0)
    assert decide(s).action == Action.SUBMIT
    assert decide(replace(s, gpus_free=8.0)).reason == Reason.GPUS_BUSY


def test_without_a_probe_the_settle_time_still_applies():
    assert decide(_ended(preempted=True)).reason == Reason.SETTLING


def test_an_attempt_that_died_before_its_first_step_backs_off_the_settle_time():
    s = _ended(gpus_free=16.0, hosts_answered=True, stepped=False)
    d = decide(s)
    assert d.reason == Reason.SETTLING and "before its first step" in d.message
    assert decide(replace(s, stable_s=60.0)).action == Action.SUBMIT
    assert decide(replace(s, stepped=True)).action == Action.SUBMIT


def test_a_failure_is_judged_at_once_when_every_node_it_ran_on_answers():
    """Every host answered: no node was lost, so it cannot be a preemption; waiting for Ray to
    mark a death is pointless. Here the crash rule applies at once."""
    s = _ended(progressed=False, gpus_free=16.0, hosts_answered=True, same_failure=True)
    assert decide(s).reason == Reason.CRASH
    assert decide(replace(s, hosts_answered=False)).reason == Reason.SETTLING


def test_gpus_held_by_other_jobs_are_a_wait_for_capacity_not_a_submit():
    """veRL checks free GPUs (ray_trainer.py L103-119 at v0.6.0); a cluster with every
    GPU present but half of them held elsewhere is waited on, also before a first attempt."""
    first = _ended(ended=None, progressed=None, gpus_free=8.0)
    d = decide(first)
    assert d.action == Action.WAIT and d.reason == Reason.GPUS_BUSY
    assert "8 of the cluster's 16 GPUs are free" in d.message


def test_an_attempt_that_could_not_reach_the_hub_gives_the_run_up_at_once_not_as_a_crash():
    """A recipe attempt that cannot stage is not restarted into the same wall (and its
    second failure called a crash): the first one ends the run with its own reason."""
    from jobs.staging.entry import HUB_UNREACHABLE_EXIT

    s = Situation(
        ended="FAILED",
        restarts_used=0,
        max_restarts=5,
        gpus_needed=16,
        gpus_at_end=16.0,
        gpus_now=16.0,
        progressed=None,
        stable_s=600.0,
        settle_s=60.0,
        exit_code=HUB_UNREACHABLE_EXIT,
    )
    d = decide(s)
    assert (d.action, d.reason) == (Action.GIVE_UP, Reason.CANNOT_STAGE)
    assert "Hugging Face Hub" in d.message and not is_crash(s)
    # Any other exit code, or a node lost under it, is judged as before.
    assert decide(replace(s, exit_code=1)).action == Action.SUBMIT
    assert decide(replace(s, preempted=True)).reason != Reason.CANNOT_STAGE


# ------------------------------------------------------------------ the facts of an ended attempt


def test_a_node_end_stop_is_a_failure_for_the_policy():
    from jobs.head.restart_policy import policy_end

    assert policy_end("SUCCEEDED", True) == "FAILED"
    assert policy_end("SUCCEEDED", False) == "SUCCEEDED"
    assert policy_end("STALLED", False) == "STALLED"


def test_only_a_succeeded_attempt_on_flex_start_nodes_of_a_stopping_framework_is_read():
    from jobs.head.restart_policy import may_have_stopped_for_node_end as may

    assert may("SUCCEEDED", 3600.0, True)
    assert not may("FAILED", 3600.0, True)
    assert not may("SUCCEEDED", 0.0, True)  # not flex-start
    assert not may("SUCCEEDED", 3600.0, False)  # veRL trains on until the node ends


def test_a_node_end_stop_is_read_from_the_last_end_record():
    from jobs.head.restart_policy import recorded_for_node_end

    assert not recorded_for_node_end(None)
    assert not recorded_for_node_end({"status": "SUCCEEDED"})
    assert recorded_for_node_end({"status": "SUCCEEDED", "saved_for_node_end": True})


def test_progress_is_a_new_checkpoint_or_a_completed_step():
    from jobs.head.restart_policy import new_checkpoint, own_progress, progressed

    before, after = frozenset({"step_10"}), frozenset({"step_10", "step_20"})
    assert new_checkpoint(after, before, True) is True
    assert new_checkpoint(before, before, True) is False
    assert new_checkpoint(after, before, False) is None
    assert own_progress(None, 0) is None  # nothing to compare, no step: unknown
    assert own_progress(None, 3) is True
    assert own_progress(False, 0) is False
    assert own_progress(False, 2) is True
    assert own_progress(True, 0) is True
    assert progressed(None, True) is None
    assert progressed(False, True) is True
    assert progressed(False, None) is False
    assert progressed(True, False) is True


def test_only_an_unjudged_failure_is_checked_against_the_node_table():
    from jobs.head.restart_policy import needs_node_check

    for ended in ("FAILED", "STALLED"):
        assert needs_node_check(_ended(ended=ended))
        assert not needs_node_check(_ended(ended=ended, preempted=True))
    for ended in (None, "SUCCEEDED", "STOPPED"):
        assert not needs_node_check(_ended(ended=ended))


def test_a_death_after_the_end_plus_the_settle_time_is_not_the_cause():
    from jobs.head.restart_policy import death_window_end_ms

    assert death_window_end_ms(10_000, 60.0, 20_000) == 20_000  # still settling: up to now
    assert death_window_end_ms(10_000, 60.0, 900_000) == 70_000


def test_a_preemption_spends_its_own_budget_and_a_stall_never_starts_a_crash():
    from jobs.head.restart_policy import Charge, charge

    assert charge(_ended(ended="FAILED", preempted=True)) == Charge.PREEMPTION
    assert charge(_ended(ended="STALLED", preempted=True)) == Charge.PREEMPTION
    assert charge(_ended(ended="FAILED")) == Charge.RESTART
    assert charge(_ended(ended="STALLED")) == Charge.STALL_RESTART


# ------------------------------------------------------------------ asking again while waiting


def test_the_first_situation_has_nothing_ended():
    from jobs.head.restart_policy import first_situation

    s = first_situation(3, 8, 600.0)
    assert (s.ended, s.restarts_used, s.max_restarts, s.gpus_needed, s.max_wait_s) == (
        None,
        0,
        3,
        8,
        600.0,
    )
    assert decide(replace(s, gpus_now=8.0)).action == Action.SUBMIT


def test_stability_counts_from_the_later_of_the_end_and_the_last_node_change():
    from jobs.head.restart_policy import ClusterNow, first_situation, with_cluster

    now = ClusterNow(gpus=8.0, stable_s=500.0, since_end_s=20.0)
    ended = with_cluster(_ended(ended="FAILED"), now, settle_s=60, stop_requested=False, waited_s=5)
    assert (ended.stable_s, ended.gpus_now, ended.settle_s, ended.waited_s) == (20.0, 8.0, 60, 5)
    fresh = with_cluster(
        first_situation(1, 8, 0.0), now, settle_s=60, stop_requested=True, waited_s=0
    )
    assert fresh.stable_s == 500.0  # nothing ended: the end does not count
    assert fresh.stop_requested


def test_the_hosts_answered_only_when_every_one_of_them_answered_a_probe():
    from jobs.head.restart_policy import ClusterNow, with_cluster

    def answered(**probe: object) -> bool:
        now = ClusterNow(gpus=8.0, stable_s=0.0, since_end_s=0.0, **probe)  # type: ignore[arg-type]
        s = with_cluster(_ended(ended="FAILED"), now, settle_s=60, stop_requested=False, waited_s=0)
        return s.hosts_answered

    both = frozenset({"a", "b"})
    assert answered(gpus_free=8.0, answering=both, hosts=frozenset({"a"}))
    assert not answered(gpus_free=8.0, answering=frozenset({"a"}), hosts=both)
    assert not answered(gpus_free=8.0, answering=both, hosts=None)  # unknown hosts
    assert not answered()  # no probe


def test_an_attempt_without_a_ray_job_id_ran_on_its_drivers_node_alone():
    from jobs.head.restart_policy import attempt_hosts

    found = frozenset({"gpu-1", "gpu-2"})
    assert attempt_hosts("02000000", "head", found) == found  # its actors and tasks
    assert attempt_hosts("02000000", "head", None) is None  # Ray's state API could not say
    # Its driver never called ray.init: nothing ran outside the driver's node.
    assert attempt_hosts(None, "head", None) == frozenset({"head"})
    assert attempt_hosts("", "gpu-1", None) == frozenset({"gpu-1"})
    assert attempt_hosts(None, None, None) is None  # the driver never started


def test_a_failure_before_ray_init_is_judged_once_its_drivers_node_answers():
    """No settle wait: the next attempt of a run needing no GPUs goes at once (it waited 60 s)."""
    from jobs.head.restart_policy import ClusterNow, attempt_hosts, with_cluster

    hosts = attempt_hosts(None, "head", None)
    base = _ended(gpus_needed=0, gpus_at_end=0.0, progressed=None, settle_s=60.0)

    def decided(answering: frozenset[str]) -> Reason:
        now = ClusterNow(
            gpus=0.0, stable_s=0.0, since_end_s=1.0, gpus_free=0.0, answering=answering, hosts=hosts
        )
        return decide(
            with_cluster(base, now, settle_s=60.0, stop_requested=False, waited_s=0)
        ).reason

    assert decided(frozenset({"head", "gpu-1"})) == Reason.CAPACITY
    assert decided(frozenset({"gpu-1"})) == Reason.SETTLING  # its node did not answer


def test_missing_then_busy_gpus_are_one_capacity_wait_said_once_and_again_periodically():
    from jobs.head.restart_policy import Note, is_capacity_wait, wait_note

    assert is_capacity_wait(Reason.NO_CAPACITY) and is_capacity_wait(Reason.GPUS_BUSY)
    assert not is_capacity_wait(Reason.SETTLING)
    assert wait_note(Reason.SETTLING, None, 0.0, 60.0) == Note.NEW_WAIT
    assert wait_note(Reason.NO_CAPACITY, Reason.SETTLING, 0.0, 60.0) == Note.NEW_WAIT
    assert wait_note(Reason.GPUS_BUSY, Reason.NO_CAPACITY, 0.0, 60.0) == Note.SAME_WAIT
    assert wait_note(Reason.NO_CAPACITY, Reason.GPUS_BUSY, 0.0, 60.0) == Note.SAME_WAIT
    assert wait_note(Reason.NO_CAPACITY, Reason.NO_CAPACITY, 59.0, 60.0) == Note.NONE
    assert wait_note(Reason.NO_CAPACITY, Reason.NO_CAPACITY, 60.0, 60.0) == Note.STILL_WAITING
    assert wait_note(Reason.SETTLING, Reason.SETTLING, 600.0, 60.0) == Note.NONE


def test_gpus_newly_busy_may_be_held_by_our_own_next_attempt():
    from jobs.head.restart_policy import Decision, may_be_own_next_attempt

    busy = Decision(Action.WAIT, Reason.GPUS_BUSY, "busy")
    assert may_be_own_next_attempt(busy, None)
    assert may_be_own_next_attempt(busy, Reason.NO_CAPACITY)
    assert not may_be_own_next_attempt(busy, Reason.GPUS_BUSY)  # asked once per busy spell
    assert not may_be_own_next_attempt(Decision(Action.WAIT, Reason.SETTLING, "s"), None)


def test_gpus_newly_missing_may_be_held_by_our_own_next_attempt_too():
    """Seed 1025: the flex-start nodes our unseen attempt ran on were too close to their end to
    count, so the GPUs read as missing, not busy, and the supervisor waited beside it."""
    from jobs.head.restart_policy import Decision, may_be_own_next_attempt

    missing = Decision(Action.WAIT, Reason.NO_CAPACITY, "missing")
    assert may_be_own_next_attempt(missing, None)
    assert may_be_own_next_attempt(missing, Reason.GPUS_BUSY)
    assert not may_be_own_next_attempt(missing, Reason.NO_CAPACITY)  # once per spell


# ------------------------------------------------------------------ a re-armed supervisor


def test_a_restored_attempt_is_live_ended_before_or_lost_with_the_head():
    from jobs.head.restart_policy import Restored, restored

    assert restored(known=True, terminal=False, end_recorded=False) == Restored.LIVE
    assert restored(known=True, terminal=False, end_recorded=True) == Restored.LIVE
    assert restored(known=True, terminal=True, end_recorded=False) == Restored.LIVE
    assert restored(known=True, terminal=True, end_recorded=True) == Restored.ENDED_BEFORE
    assert restored(known=False, terminal=False, end_recorded=True) == Restored.LOST_WITH_HEAD


def test_a_restored_end_is_as_recorded_else_the_watchdogs_stall_or_a_failure():
    from jobs.head.restart_policy import Restored, restored_end, restored_preempted

    assert restored_end(Restored.ENDED_BEFORE, "FAILED") == "FAILED"
    assert restored_end(Restored.ENDED_BEFORE, None) == "STALLED"  # seed 171
    assert restored_end(Restored.LOST_WITH_HEAD, None) == "FAILED"
    assert restored_end(Restored.LOST_WITH_HEAD, "SUCCEEDED") == "SUCCEEDED"
    assert restored_preempted(Restored.LOST_WITH_HEAD, False, False)  # lost before its end
    assert not restored_preempted(Restored.LOST_WITH_HEAD, True, False)
    assert restored_preempted(Restored.LOST_WITH_HEAD, True, True)
    assert not restored_preempted(Restored.ENDED_BEFORE, False, False)
    assert restored_preempted(Restored.ENDED_BEFORE, True, True)


def test_two_failures_are_a_crash_only_when_they_end_alike():
    """Two failures without progress, each during a load, are a crash only
    with the same exit code and the same last exception (a bad config raises the same error
    twice); two NCCL timeouts of different collectives are transient faults, retried."""
    from jobs.head.restart_policy import last_exception, same_failure

    nccl = "torch.distributed.DistBackendError: [Rank 3] Watchdog caught collective operation"
    tail = f"Job entrypoint command failed with exit code 1, ...:\nTraceback\n  x\n{nccl} 7\n"
    assert last_exception(tail) == f"{nccl} 7"
    assert last_exception("bad config\n") == ""
    first, second = (1, last_exception(tail)), (1, last_exception(tail.replace(" 7", " 9")))
    crash_like = _ended(progressed=False, gpus_free=16.0, hosts_answered=True)
    retried = decide(replace(crash_like, same_failure=same_failure(second, first)))
    assert retried.action != Action.GIVE_UP
    assert decide(replace(crash_like, same_failure=same_failure(first, first))).reason == (
        Reason.CRASH
    )
    assert same_failure((3, ""), (1, "")) is False and same_failure(None, first) is None
