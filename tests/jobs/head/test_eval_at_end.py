"""`submit --eval-at-end` on the head: the run's success sends its eval job once, for the newest
complete step, and a failure to send it is recorded beside the success, never instead of it.

The supervisor is the real one, in the deterministic simulation (tests/jobs/head/sim/world.py),
whose Jobs API records what is submitted."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.head import eval_at_end, protocol, run_end
from jobs.head import events as ev
from jobs.head.probes import Probes
from jobs.head.protocol import Settings, Spec
from jobs.head.supervisor import from_job
from tests.jobs.head.sim.world import EVAL_JOB, RUN, Fault, Schedule, World, simulate
from tests.jobs.head.test_protocol import spec


@pytest.fixture
def base(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs folder when there is one: the simulated trainer's checkpoints are real files."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        d = Path(tempfile.mkdtemp(prefix="sim-eval-", dir=shm))
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path


def _evals(world: World) -> list:
    return [j for j in world.jobs.values() if j.kind == protocol.EVAL]


def test_eval_number_follows_the_runs_evals_so_far():
    ids = ["r-a1", "r-eval-1", "r-eval-2-s1", "r-eval-2-a1", "r-eval-10-a3", "rr-eval-40"]
    assert eval_at_end.eval_number(ids, "r") == 11
    assert eval_at_end.eval_number(["r-a1", "r-s1"], "r") == 1


def test_the_step_is_put_in_the_entrypoint_and_the_metadata():
    sent = eval_at_end.filled(EVAL_JOB, 42)
    assert sent["entrypoint"] == "python3 -m jobs.head.eval_job --step 42 -- run_eval"
    assert sent["metadata"]["step"] == "42"
    assert sent["runtime_env"] == EVAL_JOB["runtime_env"]
    assert sent["entrypoint_num_cpus"] == 1.0
    assert protocol.EVAL_STEP not in json.dumps(sent)


def test_a_run_that_succeeds_queues_exactly_one_eval_of_its_newest_complete_step(base):
    world = simulate(Schedule(seed=1, faults=[], eval_at_end=True), base)
    assert world.succeeded
    recs = world.store().events()
    (queued,) = [r for r in recs if r["event"] == ev.EVAL_QUEUED]
    assert queued["submission_id"] == f"{RUN}-eval-1"
    assert queued["step"] == world.newest_complete > 0
    (sent,) = _evals(world)
    assert sent.submission_id == f"{RUN}-eval-1"
    assert f"--step {world.newest_complete} " in sent.entrypoint
    assert sent.metadata["step"] == str(world.newest_complete)
    # After the success: the run's outcome is still its success.
    events = [r["event"] for r in recs]
    assert events.index(ev.FINISHED) < events.index(ev.EVAL_QUEUED)
    assert ev.outcome(recs)["event"] == ev.FINISHED  # type: ignore[index]


def test_a_preempted_run_still_queues_one_eval_only_at_its_end(base):
    schedule = Schedule(seed=3, faults=[Fault(1000, "preempt", 600)], eval_at_end=True)
    world = simulate(schedule, base)
    assert world.succeeded
    assert any(r["event"] == ev.PREEMPTED for r in world.store().events())
    assert [j.submission_id for j in _evals(world)] == [f"{RUN}-eval-1"]


def test_an_eval_the_dashboard_refuses_leaves_the_run_a_success(base):
    schedule = Schedule(seed=1, faults=[], eval_at_end=True, eval_refused="runtime_env invalid")
    world = simulate(schedule, base)  # final_check: the record ends in the run's success
    recs = world.store().events()
    (failed,) = [r for r in recs if r["event"] == ev.EVAL_NOT_QUEUED]
    assert failed["reason"] == "submit_failed"
    assert "runtime_env invalid" in failed["message"]
    assert ev.outcome(recs)["event"] == ev.FINISHED  # type: ignore[index]
    assert not [r for r in recs if r["event"] in (ev.EVAL_QUEUED, ev.ERROR)]
    assert _evals(world) == []


def test_a_run_without_the_flag_queues_nothing(base):
    world = simulate(Schedule(seed=1, faults=[]), base)
    assert world.succeeded and _evals(world) == []
    assert not [r for r in world.store().events() if r["event"].startswith("eval_")]


class Jobs:
    """A Jobs API that lists nothing and records submits."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def list_jobs(self) -> list:
        return []

    def submit_job(self, **kwargs: object) -> str:
        self.sent.append(kwargs)
        return str(kwargs["submission_id"])


def _supervisor(checkpoint_dir: Path, job: dict | None) -> tuple[object, Jobs, list[dict]]:
    lines: list[dict] = []
    client = Jobs()
    s = spec(checkpoint_dir=str(checkpoint_dir), eval_at_end=True, eval_job=job)
    sup = from_job(
        client,
        "r-s1",
        {Spec.METADATA_KEY: s.to_json()},
        Probes(nodes=list, log_size=lambda _j: 0),
        Settings(),
        write=lambda line: lines.append(json.loads(line.removeprefix(ev.PREFIX))),
    )
    return sup, client, lines


@pytest.mark.parametrize(
    "job, reason, said",
    [
        (EVAL_JOB, "no_checkpoint", "the run left no complete checkpoint in"),
        (None, "no_eval_job", "the run's spec holds no eval job to send"),
    ],
)
def test_nothing_to_send_is_recorded_with_its_reason_after_the_success(tmp_path, job, reason, said):
    sup, client, lines = _supervisor(tmp_path, job)
    assert run_end.succeeded(sup, "run r succeeded (r-a2)", reason="succeeded") == 0  # type: ignore[arg-type]
    assert [r["event"] for r in lines] == [ev.FINISHED, ev.EVAL_NOT_QUEUED]
    assert lines[-1]["reason"] == reason and said in lines[-1]["message"]
    assert client.sent == []
