"""`eval RUN --every K`: the steps it picks, the ones it skips and why, and its refusals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.client.types import JobDetails, JobStatus
from jobs.common.errors import UsageError
from jobs.head import protocol
from jobs.recipes import evals
from jobs.runs import eval_every, evaluate, run_checkpoints
from jobs.runs.address import Where
from tests.jobs.runs.test_evaluate import recorded

steps = st.sets(st.integers(min_value=1, max_value=2000), max_size=40)


@given(complete=steps, evaluated=steps, every=st.integers(min_value=1, max_value=300))
def test_select_picks_only_complete_unevaluated_multiples_of_k(complete, evaluated, every):
    picked = eval_every.select(complete, evaluated, every)
    assert set(picked) <= complete
    assert not set(picked) & evaluated
    assert all(s % every == 0 for s in picked)
    assert picked == sorted(set(picked))
    # ...and misses none that qualifies.
    assert set(picked) == {s for s in complete - evaluated if s % every == 0}


def test_select_skips_the_newest_step_when_it_is_no_multiple():
    assert eval_every.select([100, 200, 250], [100], 100) == [200]


@pytest.mark.parametrize("every", [0, -5])
def test_select_refuses_an_interval_below_one(every):
    with pytest.raises(ValueError):
        eval_every.select([1, 2], [], every)


@pytest.mark.parametrize(
    "flags, named",
    [
        ({"every": 0}, "--every 0: the step interval must be a whole number of at least 1"),
        ({"every": -3}, "--every -3: the step interval"),
        ({"every": 10, "step": 20}, "--every 10 with --step"),
        ({"every": 10, "base": True}, "--every 10 with --base"),
        ({"every": 10, "follow_logs": True}, "--every 10 with --follow"),
    ],
)
def test_bad_flags_are_refused_by_name(flags, named):
    args = {"every": None, "step": None, "base": False, "follow_logs": False, **flags}
    with pytest.raises(UsageError) as e:
        eval_every.check_flags(**args)
    assert str(e.value).startswith(named)


def _eval_job(sid: str, step: str, status: JobStatus, k: str = "1") -> JobDetails:
    meta = {"run": "r", "kind": "eval", "step": step, "metric": "pass@k", "k": k, "n": "1"}
    return JobDetails(status=status, entrypoint="x", submission_id=sid, metadata=meta)


def _eval_supervisor(sid: str, step: str, status: JobStatus) -> JobDetails:
    spec = protocol.Spec(
        run=sid.rsplit("-s", 1)[0],
        first_attempt=1,
        max_restarts=1,
        gpus_needed=8,
        checkpoint_dir="",
        entrypoint="x",
        runtime_env={},
        metadata={"run": "r", "kind": "eval", "step": step, "metric": "pass@k", "k": "1", "n": "1"},
    )
    meta = protocol.supervisor_metadata(spec.to_dict(), 1, "t")
    return JobDetails(status=status, entrypoint="x", submission_id=sid, metadata=meta)


def test_a_step_counts_as_evaluated_when_scored_running_or_queued_the_same_way():
    jobs = [
        _eval_job("r-eval-1-a1", "100", JobStatus.SUCCEEDED),
        _eval_job("r-eval-2-a1", "200", JobStatus.RUNNING),
        _eval_supervisor("r-eval-3-s1", "300", JobStatus.RUNNING),
        _eval_job("r-eval-4-a1", "400", JobStatus.FAILED),  # failed: evaluate it again
        _eval_job("r-eval-5-a1", "500", JobStatus.SUCCEEDED, k="4"),  # another question
        _eval_supervisor("r-eval-6-s1", "600", JobStatus.SUCCEEDED),  # ended
        _eval_job("r-eval-7-a1", "", JobStatus.SUCCEEDED),  # the base model
    ]
    found = eval_every.evaluated(jobs, "r", evals.request("pass@k", 1, 1))
    assert found == {
        100: "already evaluated by r-eval-1-a1",
        200: "being evaluated by r-eval-2-a1",
        300: "queued under r-eval-3-s1",
    }


class Cluster:
    """A dashboard that lists `jobs` and records anything submitted."""

    def __init__(self, jobs: list[JobDetails]) -> None:
        self._jobs = jobs
        self.submitted: list[str] = []

    def jobs(self) -> list[JobDetails]:
        return self._jobs

    def submit(self, sub) -> str:
        self.submitted.append(sub.submission_id)
        return sub.submission_id


def _run_of(run: str, number: int) -> tuple:
    """What `evaluate.recorded_run` answers for run `r` (verl-grpo-gsm8k, 1 node x 8 GPUs)."""
    found = recorded("verl-grpo-gsm8k")
    return evaluate.RECIPES[found.recipe], found, number


@pytest.fixture
def run_with_saves(monkeypatch):
    """Run `r` (verl-grpo-gsm8k) with complete steps 100, 200, 250, 300 and 400 half-written;
    step 100 already evaluated."""
    cluster = Cluster([_eval_job("r-eval-1-a1", "100", JobStatus.SUCCEEDED)])
    monkeypatch.setattr(evaluate, "recorded_run", lambda *_a: _run_of("r", 2))
    saves = [(100, True), (200, True), (250, True), (300, True), (400, False)]
    monkeypatch.setattr(
        run_checkpoints,
        "inventory",
        lambda *_a: {"checkpoints": [{"step": s, "complete": c} for s, c in saves]},
    )
    return cluster


def _ask() -> evaluate.Ask:
    return evaluate.Ask("r", None, False, evals.request("pass@k", 1, 1))


def test_prepare_queues_one_eval_per_chosen_step_and_says_why_others_are_skipped(run_with_saves):
    where = Where("http://127.0.0.1:9", None, "--address")
    chosen = eval_every.prepare(run_with_saves, _ask(), 100, where, None)  # type: ignore[arg-type]
    assert [(s, sub.submission_id) for s, sub in chosen.queued] == [
        (200, "r-eval-2"),
        (300, "r-eval-3"),
    ]
    assert [sub.metadata["step"] for _, sub in chosen.queued] == ["200", "300"]
    assert chosen.skipped == [
        (100, "already evaluated by r-eval-1-a1"),
        (250, "not a multiple of 100"),
    ]
    assert chosen.gpus == 8
    assert run_with_saves.submitted == []  # prepare only plans


def test_nothing_to_evaluate_is_refused_naming_the_steps(run_with_saves):
    where = Where("http://127.0.0.1:9", None, "--address")
    with pytest.raises(UsageError) as e:
        eval_every.prepare(run_with_saves, _ask(), 1000, where, None)  # type: ignore[arg-type]
    assert str(e.value).startswith(
        "--every 1000: nothing to evaluate for run r: complete steps: 100, 200, 250, 300; "
        "with a result or an eval under way: 100 (already evaluated by r-eval-1-a1)"
    )
    assert run_with_saves.submitted == []
