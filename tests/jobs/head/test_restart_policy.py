"""The restart rules: never after a stop, wait for GPUs (bounded), a crash is tried at most twice."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jobs.head.restart_policy import Action, Reason, Situation, decide, is_crash

situations = st.builds(
    Situation,
    ended=st.sampled_from([None, "SUCCEEDED", "FAILED", "STOPPED"]),
    restarts_used=st.integers(0, 10),
    max_restarts=st.integers(0, 10),
    gpus_needed=st.integers(0, 64),
    gpus_at_end=st.integers(0, 64).map(float),
    gpus_now=st.integers(0, 64).map(float),
    progressed=st.sampled_from([None, True, False]),
    stop_requested=st.booleans(),
    waited_s=st.floats(0, 4000),
    max_wait_s=st.floats(0, 4000),
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
        assert s.ended is None or s.restarts_used < s.max_restarts
        assert not is_crash(s)


@given(situations)
def test_waiting_is_bounded_and_only_for_missing_gpus(s):
    d = decide(s)
    if d.action == Action.WAIT:
        assert s.gpus_now < s.gpus_needed and s.waited_s < s.max_wait_s
    if d.reason == Reason.WAIT_TIMEOUT:
        assert s.waited_s >= s.max_wait_s and str(s.gpus_needed) in d.message


@given(situations)
def test_success_finishes_unless_stopped(s):
    if s.ended == "SUCCEEDED" and not s.stop_requested:
        assert decide(s).action == Action.FINISH


def _simulate(max_restarts: int, gpus_needed: int, progress: list[bool],
              gpus_after_failure: list[float]) -> int:
    """Drive the rules as the supervisor does through attempts that all fail; return how many
    attempts were submitted. Attempt i writes a checkpoint when progress[i] and leaves
    gpus_after_failure[i] GPUs; a wait ends when the GPUs come back."""
    submitted, restarts = 1, 0
    while True:
        i = submitted - 1
        gpus = gpus_after_failure[i % len(gpus_after_failure)]
        s = Situation(ended="FAILED", restarts_used=restarts, max_restarts=max_restarts,
                      gpus_needed=gpus_needed, gpus_at_end=gpus, gpus_now=gpus,
                      progressed=None if submitted == 1 else progress[i % len(progress)])
        d = decide(s)
        if d.action == Action.WAIT:
            d = decide(Situation(**{**s.__dict__, "gpus_now": float(gpus_needed), "waited_s": 60}))
        if d.action != Action.SUBMIT:
            return submitted
        submitted += 1
        restarts += 1


@given(st.integers(0, 20), st.integers(0, 16))
def test_a_crash_with_every_gpu_present_is_tried_at_most_twice(max_restarts, gpus_needed):
    assert _simulate(max_restarts, gpus_needed, [False], [float(gpus_needed)]) == \
        min(2, max_restarts + 1)


@given(st.integers(0, 20), st.integers(1, 16),
       st.lists(st.booleans(), min_size=1, max_size=8),
       st.lists(st.integers(0, 16).map(float), min_size=1, max_size=8))
def test_attempts_never_exceed_max_restarts_plus_one(max_restarts, gpus_needed, progress, gpus):
    assert 1 <= _simulate(max_restarts, gpus_needed, progress, gpus) <= max_restarts + 1


@given(st.integers(1, 20), st.integers(1, 16))
def test_preemptions_and_progress_use_every_restart(max_restarts, gpus_needed):
    # Every failure either lost GPUs (preemption) or followed a new checkpoint: not a crash.
    assert _simulate(max_restarts, gpus_needed, [True], [0.0]) == max_restarts + 1
    assert _simulate(max_restarts, gpus_needed, [True], [float(gpus_needed)]) == max_restarts + 1


def test_the_first_failure_is_retried_even_with_every_gpu_present():
    s = Situation(ended="FAILED", restarts_used=0, max_restarts=3, gpus_needed=8,
                  gpus_at_end=8, gpus_now=8, progressed=None)
    assert decide(s).action == Action.SUBMIT


def test_a_crash_says_why_and_is_not_retried():
    s = Situation(ended="FAILED", restarts_used=1, max_restarts=5, gpus_needed=2,
                  gpus_at_end=2, gpus_now=2, progressed=False)
    d = decide(s)
    assert (d.action, d.reason) == (Action.GIVE_UP, Reason.CRASH)
    assert "every GPU present" in d.message and "no new checkpoint" in d.message


def test_missing_gpus_wait_then_give_up_after_the_limit():
    base = dict(ended="FAILED", restarts_used=0, max_restarts=1, gpus_needed=2,
                gpus_at_end=0.0, gpus_now=0.0, progressed=None, max_wait_s=1800.0)
    assert decide(Situation(**base, waited_s=10)).action == Action.WAIT
    late = decide(Situation(**base, waited_s=1800))
    assert (late.action, late.reason) == (Action.GIVE_UP, Reason.WAIT_TIMEOUT)
    back = decide(Situation(**{**base, "gpus_now": 2.0}, waited_s=100))
    assert back.action == Action.SUBMIT
