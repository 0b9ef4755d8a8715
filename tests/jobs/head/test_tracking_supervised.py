"""One W&B run across a supervised run's attempts, on a real local Ray with W&B's own client offline.

A stub trainer initialises W&B as each framework does, holds a GPU actor on a fake GPU raylet,
saves its step after every step and logs it; the raylet is SIGKILLed (a reclaimed spot node)
three times and replaced, and the supervisor resumes the run each time. The four attempts' offline
run folders must carry the one id the run's record keeps, with steps that never repeat; a second
run gets an id of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import tracking
from tests import localray
from tests.jobs import wandb_offline
from tests.jobs.conftest import wait_until
from tests.jobs.gpu_node import GpuNode, close_all
from tests.jobs.head.test_survival import FAST, finished, name, record, runs_root

pytestmark = pytest.mark.ray

pytest.importorskip("wandb")

# How each framework calls wandb.init: NeMo RL v0.4.0 passes its `logger.wandb` section as keyword
# arguments (nemo_rl/utils/logger.py L172, `wandb.init(**cfg)`); veRL 0.6.0 passes its project and
# experiment names, no id (verl/utils/tracking.py L69), so only WANDB_RUN_ID / WANDB_RESUME from
# the environment can make its attempts one run.
INIT = {
    "nemo-rl": "cfg = {'project': 'rl-on-gke', 'name': RUN}\nrun = wandb.init(**cfg)",
    "verl": (
        "run = wandb.init(project='rl-on-gke', name=RUN, "
        "config={'trainer': {'total_training_steps': 99}})"
    ),
}


def trainer(d: Path, run: str, framework: str, last_attempt: int) -> str:
    """Attempt n (0-based) resumes from the step saved in `d`; before `last_attempt` it trains
    until its GPU worker is lost, then it trains 3 more steps and ends."""
    return f"""
import os, sys, time
d = {str(d)!r}; RUN = {run!r}
os.makedirs(d, exist_ok=True)
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_DIR"] = d
import ray, wandb
n = len([f for f in os.listdir(d) if f.startswith("attempt-")])
open(os.path.join(d, f"attempt-{{n}}"), "w").close()
saved = os.path.join(d, "saved-step")
step = int(open(saved).read()) if os.path.exists(saved) else 0
{INIT[framework]}
ray.init(address="auto", log_to_driver=False)
@ray.remote(num_gpus=1, num_cpus=0)  # the GPU raylet has no CPUs
class W:
    def ping(self): return 1
w = W.remote()
ray.get(w.ping.remote(), timeout=120)
end = step + 3 if n >= {last_attempt} else 10**6
try:
    while step < end:
        ray.get(w.ping.remote(), timeout=60); time.sleep(0.3)
        step += 1
        with open(saved + ".tmp", "w") as f: f.write(str(step))
        os.replace(saved + ".tmp", saved)  # saved before it is logged: a resume never re-logs it
        run.log({{"loss": 1.0 / step}}, step=step)
        if step >= 2: open(os.path.join(d, f"stepped-{{n}}"), "w").close()
except Exception as e:
    print("lost my GPU worker:", type(e).__name__, flush=True)
    run.finish(exit_code=1); sys.exit(1)
run.finish()
print("done", flush=True)
"""


@pytest.fixture(scope="module")
def head() -> Iterator[localray.LocalRay]:
    h = localray.start(num_cpus=2, extra_env=localray.FAST_HEALTH)
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def gpu(head: localray.LocalRay) -> Iterator[list[GpuNode]]:
    nodes = [GpuNode(head, gpus=2)]
    try:
        nodes[0].join()
        yield nodes
    finally:
        try:
            close_all(nodes)
        finally:
            _stop_runs(head)


def _stop_runs(head: localray.LocalRay) -> None:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(head.dashboard_url)
    jobs = [j for j in client.list_jobs() if (j.metadata or {}).get("run", "").startswith("wb-")]
    for sup_first in (True, False):  # supervisors first: nothing is resubmitted after
        for job in jobs:
            if ((job.metadata or {}).get("kind") == "supervisor") == sup_first:
                if not job.status.is_terminal():
                    client.stop_job(job.submission_id)


def _preempt(head: localray.LocalRay, nodes: list[GpuNode]) -> None:
    """SIGKILL the GPU raylet's tree (a reclaimed VM says no goodbye) and join a replacement."""
    nodes[-1].kill()
    replacement = GpuNode(head, gpus=2)
    nodes.append(replacement)
    replacement.join(timeout=180)


# The settle a failure waits for Ray to mark a lost node dead before it is judged a crash. Under
# FAST_HEALTH Ray marks a SIGKILLed raylet dead 4-7 s after the kill on a quiet machine, later with
# other suites on both cores; the driver can see its actor gone before that. The settle ends as soon
# as the death is seen, so a long one costs these preemptions nothing; a short one (3 s) can turn a
# preemption into a crash under load, which ends this run (no restarts allowed).
SETTLE = {**FAST, "JOBS_SUPERVISOR_SETTLE_S": "30"}


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), env={**SETTLE, "RAY_ADDRESS": None, "COLUMNS": "250"}
    )
    return result.exit_code, result.stdout, result.stderr


def _story(head: localray.LocalRay, root: Path, run: str) -> str:
    """The run's decisions and its newest attempt's log tail: what a failed wait shows."""
    from ray.job_submission import JobSubmissionClient

    recs = record(root, run)
    lines = [f"{r.get('t')} {r['event']}: {r.get('message', '')}" for r in recs]
    submitted = [r["submission_id"] for r in recs if r["event"] == "submitted"]
    if submitted:
        try:
            log = JobSubmissionClient(head.dashboard_url).get_job_logs(submitted[-1])
        except Exception as e:  # the story of a failure must not hide it
            log = f"(its log could not be read: {e})"
        lines += [f"--- {submitted[-1]}, last 40 lines:", *log.splitlines()[-40:]]
    return "\n".join(lines)


def _wait_stepping(head: localray.LocalRay, root: Path, run: str, d: Path, attempt: int) -> None:
    """Wait for attempt `attempt` (0-based) to step; a run that ends first fails at once."""
    stepped = d / f"stepped-{attempt}"
    try:
        wait_until(
            lambda: stepped.exists() or finished(root, run) is not None,
            300,
            f"attempt {attempt + 1} stepping",
        )
    except AssertionError as e:
        raise AssertionError(f"{e}\n{_story(head, root, run)}") from None
    assert stepped.exists(), f"the run ended before attempt {attempt + 1} stepped:\n" + _story(
        head, root, run
    )


def _supervise(head: localray.LocalRay, root: Path, run: str, script: str) -> None:
    code, _, err = cli(
        "run",
        "--address",
        head.dashboard_url,
        "--name",
        run,
        "--cluster-gpus",
        "2",
        "--max-restarts",
        "0",
        "--max-preemptions",
        "3",
        "--runs-root",
        str(root),
        "--",
        "python",
        "-c",
        script,
    )
    assert code == 0, err


@pytest.mark.parametrize("framework", list(INIT))
def test_a_run_preempted_three_times_is_one_wandb_run_with_steps_that_never_repeat(
    head, gpu, tmp_path, framework
):
    run, d, root = name("wb-" + framework), tmp_path / "trainer", runs_root(tmp_path)
    _supervise(head, root, run, trainer(d, run, framework, last_attempt=3))
    for i in range(3):
        # Death detection, a resubmit, a driver start, wandb's start: seconds on a quiet machine,
        # minutes with other suites on two cores.
        _wait_stepping(head, root, run, d, i)
        _preempt(head, gpu)
    wait_until(lambda: finished(root, run) is not None, 600, "the run's end")
    recs = record(root, run)
    assert finished(root, run)["event"] == "finished", _story(head, root, run)
    assert [r["attempt"] for r in recs if r["event"] == "preempted"] == [1, 2, 3]

    kept = tracking.kept_id(recs)
    offline = wandb_offline.runs(d)
    assert len(offline) == 4, [o.folder.name for o in offline]  # one folder per attempt
    assert {o.run_id for o in offline} == {kept}, (kept, offline)
    assert all(o.folder.name.endswith(f"-{kept}") for o in offline)
    steps = [s for o in offline for s in o.steps]
    assert all(o.steps for o in offline), offline  # every attempt logged
    assert steps == sorted(set(steps)), steps  # strictly increasing across the four attempts

    # A new run is a new W&B run.
    other, d2, root2 = name("wb-" + framework), tmp_path / "other", tmp_path / "runs2"
    root2.mkdir()
    _supervise(head, root2, other, trainer(d2, other, framework, last_attempt=0))
    wait_until(lambda: finished(root2, other) is not None, 300, "the second run's end")
    assert finished(root2, other)["event"] == "finished"
    [second] = wandb_offline.runs(d2)
    assert second.run_id == tracking.kept_id(record(root2, other)) != kept
    assert second.steps == [1, 2, 3]
