"""A supervised run's life read by every command alike, on a real local Ray.

A run whose supervisor is gone (an out-of-memory kill: SIGKILL to its python) before attempt 1, or
while its attempt runs, is still a run: its name is taken, `list`, `status`, `logs` and
`submit --resume` agree on it, `status` suggests only what will work, and `stop` of a run kept on
a runs root ends its record STOPPED, never re-armed.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import ray  # noqa: F401  (makes Ray's vendored psutil importable)

# isort: split
import psutil  # Ray's vendored copy, importable once `ray` is imported
from ray.job_submission import JobStatus, JobSubmissionClient
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import events as ev
from jobs.head.rearm import Rearmer
from jobs.head.run_store import RunStore
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.ray

FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="1",
    JOBS_SUPERVISOR_PROGRESS_S="2",
    JOBS_SUPERVISOR_MAX_WAIT_S="600",
    JOBS_SUPERVISOR_LEASE_S="3",
)
SLEEPER = ["python", "-c", "import time; print('training', flush=True); time.sleep(600)"]


def runs_root(tmp_path: Path) -> Path:
    """A runs root that exists, as on a stack's Lustre (the supervisor refuses a missing one)."""
    root = tmp_path / "runs"
    root.mkdir()
    return root


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        app, list(args), env={**FAST, "RAY_ADDRESS": None, "COLUMNS": "250"}
    )
    return result.exit_code, result.stdout, result.stderr


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _status(client: JobSubmissionClient, job_id: str) -> JobStatus | None:
    try:
        return client.get_job_status(job_id)
    except RuntimeError:
        return None


def _ids(client: JobSubmissionClient, run: str) -> set[str]:
    return {
        j.submission_id or "" for j in client.list_jobs() if (j.metadata or {}).get("run") == run
    }


def _kill_supervisor(client: JobSubmissionClient, sid: str) -> None:
    """SIGKILL the supervisor's python, as an out-of-memory kill would, and wait for Ray to see it."""
    [sup] = [
        p
        for p in psutil.process_iter(["cmdline"])
        if {"jobs.head.supervisor", sid} <= set(p.info["cmdline"] or [])
    ]
    sup.kill()
    wait_until(lambda: (_status(client, sid) or JobStatus.RUNNING).is_terminal(), 60, f"{sid} ends")


def _armed_waiting(ray_url: str, run: str, start: list[str], tail: list[str]) -> None:
    """Start `run` so that its supervisor waits (this head has no GPU) before attempt 1."""
    code, _, err = cli(*start, "--address", ray_url, "--name", run, "--max-restarts", "1", *tail)
    assert code == 0, err
    wait_until(
        lambda: (
            "waiting"
            in [
                e["event"]
                for e in json.loads(cli("status", run, "--json", "--address", ray_url)[1])[
                    "history"
                ]
            ]
        ),
        60,
        "waiting for GPUs",
    )


@pytest.fixture(autouse=True)
def _no_leftovers(ray_client) -> object:
    yield
    # Supervisors first: nothing is resubmitted after.
    for sup_first in (True, False):
        for job in ray_client.list_jobs():
            meta = job.metadata or {}
            if meta.get("run", "").startswith("life-") and not job.status.is_terminal():
                if (meta.get("kind") == "supervisor") == sup_first:
                    ray_client.stop_job(job.submission_id)


def test_a_run_with_only_its_supervisor_keeps_its_name(ray_url, ray_client):
    """`run --name X` was accepted beside X's supervisor (waiting for GPUs, or
    dead before attempt 1) and mixed a new unsupervised attempt into the run."""
    run = name("life-name")
    _armed_waiting(ray_url, run, ["run", "--gpus", "2"], ["--", "true"])
    code, _, err = cli("run", "--address", ray_url, "--name", run, "--", "true")
    assert code == 2, err
    assert f"run {run!r} already exists on this cluster" in err
    _kill_supervisor(ray_client, f"{run}-s1")
    code, _, err = cli("run", "--address", ray_url, "--name", run, "--", "true")
    assert code == 2, err
    assert f"run {run!r} already exists on this cluster" in err
    assert _ids(ray_client, run) == {f"{run}-s1"}


def test_a_recipe_run_whose_supervisor_died_before_attempt_1_reads_alike_everywhere(
    ray_url, ray_client
):
    """`status` suggested `submit --resume`, which answered "no run named";
    `list` showed the run and `logs` printed nothing with exit 0."""
    run = name("life-early")
    # The recipe's 8 x 8 GPUs are missing on this head: the supervisor waits before attempt 1.
    _armed_waiting(ray_url, run, ["submit", "nemo-rl-grpo-math"], [])
    _kill_supervisor(ray_client, f"{run}-s1")

    code, out, err = cli("status", run, "--json", "--address", ray_url)
    assert code == 0, err
    story = json.loads(out)
    code, out, err = cli("list", "--json", "--address", ray_url)
    assert code == 0, err
    [row] = [r for r in json.loads(out) if r["run"] == run]
    # Not over and nobody drives it, as the runs root says it (it was FAILED here).
    assert row["status"] == story["status"] == "UNSUPERVISED"
    assert row["attempts"] == [] and story["submission_id"] is None
    assert any("submit --resume " + run in step for step in story["next"]), story["next"]

    code, out, err = cli("logs", run, "--address", ray_url)
    assert code == 0, err
    assert f"==> {run}-s1 (FAILED) <==" in out and "[supervisor]" in out

    # What status suggested works: attempt 1, as the supervisor would have sent it.
    code, out, err = cli("submit", "--resume", run, "--address", ray_url, "--json")
    assert code == 0, err
    assert json.loads(out)["submission_id"] == f"{run}-a1"
    assert f"resuming run {run} after {run}-s1 FAILED" in err


def test_status_of_a_run_whose_supervisor_died_mid_attempt_suggests_what_works(ray_url, ray_client):
    """`status` suggested `submit --resume`, which refuses a running attempt; once
    the run is stopped, resuming it is suggested and works (`run` runs are resumable now)."""
    run = name("life-mid")
    code, _, err = cli(
        "run", "--address", ray_url, "--name", run, "--max-restarts", "1", "--", *SLEEPER
    )
    assert code == 0, err
    wait_until(lambda: _status(ray_client, f"{run}-a1") == JobStatus.RUNNING, 60, "a1 runs")
    _kill_supervisor(ray_client, f"{run}-s1")

    code, out, err = cli("status", run, "--address", ray_url)
    assert code == 0, err
    assert "--resume" not in out and "re-armer" not in out, out
    assert f"logs {run}-a1 --follow" in out and f"stop {run}" in out, out
    code, _, err = cli("submit", "--resume", run, "--address", ray_url)
    assert code == 2 and f"run {run} is still RUNNING" in err

    assert cli("stop", run, "--address", ray_url)[0] == 0
    code, out, err = cli("status", run, "--json", "--address", ray_url)
    assert code == 0, err
    # Stopped, a `run` run can be resumed as it ran: suggested, and it would work.
    steps = json.loads(out)["next"]
    assert any(f"submit --resume {run}" in s for s in steps), steps
    code, out, err = cli("submit", "--resume", run, "--address", ray_url, "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["submission_id"] == f"{run}-a2"


def _rearm_once(ray_url: str, root: Path) -> list[str]:
    return Rearmer(JobSubmissionClient(ray_url), str(root), write=lambda _: None).sweep()


def test_stop_of_an_unsupervised_runs_root_run_ends_its_record_stopped(
    ray_url, ray_client, tmp_path
):
    """The attempt was stopped in Ray, the record kept saying UNSUPERVISED, and
    the re-armer re-armed it until it GAVE_UP."""
    run, root = name("life-stop"), runs_root(tmp_path)
    code, _, err = cli(
        "run", "--address", ray_url, "--name", run, "--runs-root", str(root), "--", *SLEEPER
    )
    assert code == 0, err
    wait_until(lambda: _status(ray_client, f"{run}-a1") == JobStatus.RUNNING, 60, "a1 runs")
    _kill_supervisor(ray_client, f"{run}-s1")
    wait_until(
        lambda: (
            json.loads(cli("status", run, "--runs-root", str(root), "--json")[1])["status"]
            == "UNSUPERVISED"
        ),
        30,
        "unsupervised",
    )
    code, out, err = cli("stop", run, "--address", ray_url, "--json")
    assert code == 0, err
    assert {"submission_id": f"{run}-a1", "status": "STOPPED"} in json.loads(out)["stopped"]
    code, out, err = cli("status", run, "--runs-root", str(root), "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "STOPPED"
    assert _rearm_once(ray_url, root) == []
    time.sleep(1)
    assert f"{run}-s2" not in _ids(ray_client, run)


def test_stop_with_runs_root_ends_a_run_this_cluster_does_not_know(ray_url, ray_client, tmp_path):
    """`stop` had no --runs-root; a run recorded there whose head was lost
    (no job of it on this cluster) could not be stopped before the re-armer took it back."""
    run, root = name("life-lost"), runs_root(tmp_path)
    store = RunStore(root, run)
    store.write_spec({"run": run})
    store.acquire(f"{run}-s1", ttl_s=0.01)  # its supervisor died with the old head
    store.append(ev.record(ev.SUBMITTED, run, "submitted", attempt=1, submission_id=f"{run}-a1"))
    code, out, err = cli("stop", run, "--address", ray_url, "--runs-root", str(root), "--json")
    assert code == 0, err
    assert json.loads(out)["run"] == run
    code, out, err = cli("status", run, "--runs-root", str(root), "--json")
    assert json.loads(out)["status"] == "STOPPED", out
    assert _rearm_once(ray_url, root) == []


def test_list_shows_a_supervisor_that_gave_up_as_gave_up_not_succeeded(ray_url):
    """A supervisor that gave up ends its Ray job SUCCEEDED
    (it ended as designed), and `list` showed only that word beside it."""
    run = name("life-gaveup")
    code, out, err = cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--max-restarts",
        "3",
        "--follow",
        "--json",
        "--",
        "python",
        "-c",
        "raise SystemExit(3)",
    )
    assert code == 1, err
    assert json.loads(out)["outcome"]["event"] == "gave_up"
    code, out, err = cli("list", "--address", ray_url)
    assert code == 0, err
    [line] = [t for t in out.splitlines() if f"supervisor {run}-s1" in t]
    assert f"supervisor {run}-s1 GAVE_UP: gave up: crash" in line, line
    code, out, err = cli("list", "--address", ray_url, "--json")
    [row] = [r for r in json.loads(out) if r["run"] == run]
    assert row["supervisor"]["outcome"] == "gave_up"


def test_status_accounts_a_supervised_runs_life_in_goodput_buckets(ray_url):
    """Goodput: `status` reads the steps the attempt logged (veRL's console line:
    timing_s/step excludes timing_s/save_checkpoint) and puts the rest of its life elsewhere."""
    run = name("life-goodput")
    steps = (
        "import time; time.sleep(1.5); "
        "print('step:1 - critic/score/mean:0.1 - timing_s/step:0.5', flush=True); "
        "print('step:2 - critic/score/mean:0.2 - timing_s/step:0.5 - "
        "timing_s/save_checkpoint:0.25', flush=True)"
    )
    code, out, err = cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--follow",
        "--json",
        "--",
        "python",
        "-c",
        steps,
    )
    assert code == 0, err
    code, out, err = cli("status", run, "--address", ray_url, "--json")
    assert code == 0, err
    view = json.loads(out)
    assert view["progress"]["step"] == 2 and view["progress"]["reward"] == 0.2
    seconds = view["goodput"]["seconds"]
    assert seconds["productive"] == 1.0 and seconds["saves"] == 0.2  # 0.25 rounded to 0.1 s
    assert seconds["redone"] == seconds["stalls"] == seconds["capacity"] == 0
    assert seconds["restart"] >= 1.5 - 0.75  # the sleep before step 1, less rounding
    code, out, err = cli("status", run, "--address", ray_url)
    assert code == 0, err
    assert "goodput:" in out and "productive of" in out, out
    assert "progress: step 2, reward 0.2, 0.5 s/step" in out, out
    assert "reward: ▁█ (0.1 to 0.2)" in out, out


def test_logs_tail_prints_the_last_lines_of_the_latest_attempt(ray_url):
    """`logs --tail N` prints the last N lines of the latest attempt."""
    run = name("life-tail")
    lines = "; ".join(f"print('line {n}', flush=True)" for n in range(1, 6))
    code, out, err = cli(
        "run", "--address", ray_url, "--name", run, "--follow", "--", "python", "-c", lines
    )
    assert code == 0, err
    code, out, err = cli("logs", run, "--address", ray_url, "--tail", "2")
    assert code == 0, err
    assert out.splitlines()[-2:] == ["line 4", "line 5"] and "line 3" not in out, out
    code, out, err = cli("logs", run, "--address", ray_url, "--tail", "2", "--follow")
    assert code == 2 and "--tail cannot be combined with --follow" in err, err
    code, out, err = cli("logs", run, "--address", ray_url, "--tail", "0")
    assert code == 2 and "--tail" in err, err


def test_status_of_a_failed_run_quotes_the_error_it_ended_on_not_the_log_tail(ray_url):
    """Why the run ended, in one line: the error it ended on, not its log's last line."""
    run = name("life-error")
    failing = "print('x' * 300); raise ValueError('the reward function returned None')"
    code, out, err = cli(
        "run", "--address", ray_url, "--name", run, "--follow", "--", "python", "-c", failing
    )
    assert code != 0
    code, out, err = cli("status", run, "--address", ray_url)
    assert code == 0, err
    assert "error: ValueError: the reward function returned None" in out, out
    assert "x" * 300 not in out and f"logs {run} --tail 50 --address {ray_url}" in out, out
    code, out, err = cli("status", run, "--address", ray_url, "--json")
    assert "x" * 300 in json.loads(out)["message"]  # --json keeps Ray's whole message
