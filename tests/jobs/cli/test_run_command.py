"""`python -m jobs run` and `logs` as users meet them, against a real local Ray head with a
1-GPU raylet (tests/jobs/gpu_node.py): run names in a shell loop, the command's own GPUs and
resources, every attempt's log, and stopping a job that never started."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from jobs.cli.app import app
from tests.jobs.conftest import REPO, clean_env, run_cli
from tests.jobs.gpu_node import GpuNode, joined

pytestmark = [pytest.mark.ray, pytest.mark.subprocess_cli]


@pytest.fixture(scope="module")
def gpu_node(ray_head) -> Iterator[GpuNode]:
    with joined(ray_head, 1) as node:
        yield node


def _json_values(text: str) -> list[dict]:
    """The JSON documents printed one after another (each --json output is one document)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def test_a_generated_name_is_not_checked_against_the_clusters_jobs(
    ray_url, ray_client, monkeypatch
):
    """Listing every job to check a run's name costs a request that grows
    with the cluster's jobs. A name `run` generated is new by construction; one the user gave
    is still checked (a supervisor alone takes a name)."""
    from jobs.client.dashboard import Dashboard

    listed: list[Dashboard] = []
    real_jobs = Dashboard.jobs

    def counted(self: Dashboard) -> list:
        listed.append(self)
        return real_jobs(self)

    monkeypatch.setattr(Dashboard, "jobs", counted)
    env = {"RAY_ADDRESS": None, "JOBS_DEBUG": None}
    generated = CliRunner().invoke(app, ["run", "--address", ray_url, "--", "true"], env=env)
    assert generated.exit_code == 0, generated.stderr
    assert listed == []
    given = f"given-{uuid.uuid4().hex[:8]}"
    named = CliRunner().invoke(
        app, ["run", "--address", ray_url, "--name", given, "--", "true"], env=env
    )
    assert named.exit_code == 0, named.stderr
    assert len(listed) == 1
    ray_client.stop_job(generated.stdout.strip())
    ray_client.stop_job(named.stdout.strip())


def test_default_named_runs_started_within_a_second_all_start(ray_url, ray_client, gpu_node):
    """The same in this process, where a `run` takes a fraction of a second: on the old names
    (unique per second) two of these four always collided."""
    runner = CliRunner()
    started = time.monotonic()
    results = [
        runner.invoke(
            app,
            ["run", "--json", "--address", ray_url, "--", "true"],
            env={"RAY_ADDRESS": None, "JOBS_DEBUG": None},
        )
        for _ in range(4)
    ]
    took = time.monotonic() - started
    for result in results:
        assert result.exit_code == 0, result.stderr
    runs = [json.loads(r.stdout)["run"] for r in results]
    assert len(set(runs)) == 4, (runs, f"{took:.1f} s")


def test_three_default_named_runs_in_a_shell_loop_all_start(ray_url, ray_client, gpu_node):
    """Names were unique per second, so the loop's second `run` exited 2."""
    loop = (
        f'for i in 1 2 3; do "{sys.executable}" -m jobs run --json --address {ray_url} '
        "-- true || exit 1; done"
    )
    done = subprocess.run(
        ["bash", "-c", loop], cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    runs = [view["run"] for view in _json_values(done.stdout)]
    assert len(set(runs)) == 3 and all(r.startswith("run-") for r in runs)
    assert runs == sorted(runs)  # started one after the other: the names sort in that order
    known = {j.submission_id for j in ray_client.list_jobs()}
    assert {f"{r}-a1" for r in runs} <= known


PRINT_GPUS = "import os; print('CUDA=' + os.environ.get('CUDA_VISIBLE_DEVICES', 'unset'))"


def test_run_gpus_gives_the_command_its_gpu(ray_url, ray_client, gpu_node):
    """`run --gpus 1` only waited for a GPU in the cluster (and needed
    --max-restarts); the command ran on the GPU-less head without CUDA_VISIBLE_DEVICES."""
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--gpus",
            "1",
            "--follow",
            "--json",
            "--address",
            ray_url,
            "--",
            "python",
            "-c",
            PRINT_GPUS,
        ],
        env={"RAY_ADDRESS": None, "JOBS_DEBUG": None},
    )
    assert result.exit_code == 0, result.stderr
    view = json.loads(result.stdout)
    assert view["status"] == "SUCCEEDED"
    # --json --follow names the attempt at the top level, as --json without --follow does.
    assert view["submission_id"] == view["attempts"][0]["submission_id"]
    assert "CUDA=0" in result.stderr  # Ray gave the driver the raylet's one GPU


@pytest.mark.parametrize(
    "flags", [["--cpus", "1000"], ["--resource", "no_such_resource=1"]], ids=["cpus", "resource"]
)
def test_run_reservations_hold_the_command_until_a_node_has_them(ray_url, ray_client, flags):
    """--cpus and --resource reach Ray as entrypoint_num_cpus / entrypoint_resources: asking for
    what no node has keeps even `true` PENDING "waiting for resources" (the dashboard's job
    record does not show the fields themselves)."""
    result = CliRunner().invoke(
        app,
        ["run", *flags, "--json", "--address", ray_url, "--", "true"],
        env={"RAY_ADDRESS": None, "JOBS_DEBUG": None},
    )
    assert result.exit_code == 0, result.stderr
    job_id = json.loads(result.stdout)["submission_id"]
    try:
        time.sleep(5)  # `true` without the reservation ends in about a second
        info = ray_client.get_job_info(job_id)
        assert info.status.value == "PENDING"
        assert "waiting for resources" in (info.message or "")
    finally:
        run_cli("stop", job_id, "--address", ray_url, env=clean_env(JOBS_STOP_WAIT_S="1"))


@pytest.mark.parametrize(
    "item, words",
    [("slot", "is not NAME=AMOUNT"), ("slot=0", "positive"), ("GPU=1", "GPU has its own option")],
)
def test_a_bad_resource_is_refused_naming_it(item, words):
    result = CliRunner().invoke(
        app,
        ["run", "--resource", item, "--address", "http://127.0.0.1:9", "--", "true"],
        env={"RAY_ADDRESS": None, "JOBS_DEBUG": None},
    )
    assert result.exit_code == 2
    assert f"--resource {item!r}" in result.stderr and words in result.stderr


# The supervisor's periods, shortened (jobs/head/protocol.py Settings; the CLI forwards them).
FAST = {
    "JOBS_SUPERVISOR_POLL_S": "0.5",
    "JOBS_SUPERVISOR_SETTLE_S": "1",
    "JOBS_SUPERVISOR_PROGRESS_S": "2",
    "JOBS_SUPERVISOR_MAX_WAIT_S": "180",
}


def test_logs_of_a_run_show_every_attempt_failed_ones_included(ray_url, gpu_node, tmp_path):
    """`logs RUN` showed the supervisor's decisions and the latest attempt only."""
    marker = tmp_path / "ckpt"
    script = (
        f"import os, sys; p = {str(marker)!r}\n"
        "if os.path.exists(p): print('second-attempt-' + 'resumed'); sys.exit(0)\n"
        "open(p, 'w').close(); print('first-attempt-' + 'died'); sys.exit(1)"
    )
    run = f"logs-{uuid.uuid4().hex[:8]}"
    env = {**FAST, "RAY_ADDRESS": None, "JOBS_DEBUG": None}
    done = CliRunner().invoke(
        app,
        [
            "run",
            "--name",
            run,
            "--max-restarts",
            "1",
            "--follow",
            "--json",
            "--address",
            ray_url,
            "--",
            "python",
            "-c",
            script,
        ],
        env=env,
    )
    assert done.exit_code == 0, done.stderr
    result = CliRunner().invoke(app, ["logs", run, "--address", ray_url], env=env)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    first, second = f"==> {run}-a1 (FAILED) <==", f"==> {run}-a2 (SUCCEEDED) <=="
    assert first in text and second in text
    # (The printed words are built at run time, so the echoed entrypoint does not hold them.)
    assert (
        text.index(first)
        < text.index("first-attempt-died")
        < text.index(second)
        < text.index("second-attempt-resumed")
    )
    assert text.startswith("[supervisor] ")  # the decisions come first, as before


def test_stopping_a_job_that_waits_for_resources_ends_with_a_message(ray_url, ray_client, gpu_node):
    """`stop` of a PENDING job waited forever, silently when piped: Ray keeps a
    stopped job that was never placed PENDING until its start times out (15 min)."""
    job_id = f"pending-{uuid.uuid4().hex[:8]}"
    ray_client.submit_job(
        entrypoint="true", submission_id=job_id, entrypoint_resources={"no_such_resource": 1}
    )
    try:
        done = run_cli(
            "stop", job_id, "--address", ray_url, env=clean_env(JOBS_STOP_WAIT_S="3"), timeout=90
        )
        assert done.returncode == 0, done.stderr
        assert f"{job_id}: stopping (PENDING) ..." in done.stderr  # said while waiting, piped
        assert f"{job_id} is still PENDING 3 s after the stop request" in done.stderr
        assert "RAY_JOB_START_TIMEOUT_SECONDS" in done.stderr
        assert done.stdout.strip() == f"{job_id} PENDING"
    finally:
        ray_client.delete_job(job_id) if ray_client.get_job_status(job_id).is_terminal() else None


def test_submits_gpu_count_is_the_supervisors_reading_of_the_node_table(ray_url, gpu_node):
    """Submit's GPU warning and the supervisor's wait read one source."""
    from jobs.client.dashboard import Dashboard
    from jobs.head import node_events
    from jobs.runs import capacity

    dashboard = Dashboard(ray_url)
    assert capacity.alive_gpus(dashboard) == 1.0
    assert node_events.alive_gpu_nodes(dashboard.nodes())[1] == 1.0
    assert capacity.alive_gpus(Dashboard("http://127.0.0.1:9")) is None  # nothing listens there


def test_a_run_run_is_resumed_with_its_code_command_and_checkpoint_dir(
    ray_url, ray_client, tmp_path
):
    """`run` runs can be resumed: attempt 2 runs the same uploaded code and command
    (it finds the marker attempt 1 left and succeeds), saving where attempt 1 did."""
    code_dir = tmp_path / "code"
    code_dir.mkdir()
    marker = tmp_path / "tried"
    (code_dir / "train.py").write_text(
        "import os, sys\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    sys.exit('first try fails')\n"
        "print('trained from the uploaded code')\n"
    )
    run = f"resume-cmd-{uuid.uuid4().hex[:6]}"
    done = run_cli(
        "run", "--address", ray_url, "--name", run, "--working-dir", str(code_dir),
        "--checkpoint-dir", "/lustre/runs/x/ckpt", "--cpus", "1", "--follow", "--",
        "python", "train.py",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    # Ray's job record does not give the driver's reservation back: the metadata carries it.
    shown = run_cli("submit", "--resume", run, "--address", ray_url, "--dry-run", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["entrypoint_num_cpus"] == 1
    done = run_cli("submit", "--resume", run, "--address", ray_url, "--follow")
    assert done.returncode == 0, done.stderr
    assert f"resuming run {run} after {run}-a1 FAILED, saving to /lustre/runs/x/ckpt" in done.stderr
    second = ray_client.get_job_info(f"{run}-a2")
    first = ray_client.get_job_info(f"{run}-a1")
    assert second.entrypoint == first.entrypoint == "python train.py"
    assert second.runtime_env["working_dir"] == first.runtime_env["working_dir"]
    assert second.metadata["checkpoint_dir"] == "/lustre/runs/x/ckpt"
    assert "trained from the uploaded code" in ray_client.get_job_logs(f"{run}-a2")


def test_a_run_whose_uploaded_code_is_gone_is_refused_by_name(ray_url, ray_client):
    """A package the head no longer holds (Ray removes unused ones; a new head has none) is
    named, with how to start the command again, and nothing is submitted."""
    run = f"gone-{uuid.uuid4().hex[:6]}"
    gone = "gcs://_ray_pkg_0123456789abcdef.zip"
    ray_client.submit_job(
        entrypoint="python train.py",
        submission_id=f"{run}-a1",
        runtime_env={"working_dir": gone},
        metadata={"run": run, "attempt": "1", "kind": "command"},
    )
    deadline = time.monotonic() + 120
    while not ray_client.get_job_status(f"{run}-a1").is_terminal():
        assert time.monotonic() < deadline, "the attempt did not end"
        time.sleep(0.5)
    done = run_cli("submit", "--resume", run, "--address", ray_url)
    assert done.returncode == 2
    assert f"run {run}'s uploaded code ({gone}) is no longer on this head" in done.stderr
    assert "--working-dir DIR" in done.stderr
    assert f"{run}-a2" not in {j.submission_id for j in ray_client.list_jobs()}


@pytest.mark.parametrize(("exit_with", "code", "status"), [(0, 0, "SUCCEEDED"), (3, 1, "FAILED")])
def test_run_wait_without_supervision_returns_at_the_jobs_end_with_its_status(
    ray_url, ray_client, exit_with, code, status
):
    """`run --wait` of an unsupervised job returned at once with the job PENDING, the flag
    silently ignored; it waits for the end, as `ray job submit` does by default."""
    result = CliRunner().invoke(
        app,
        ["run", "--wait", "--json", "--address", ray_url, "--", "python", "-c",
         f"import sys, time; time.sleep(2); sys.exit({exit_with})"],
        env={"RAY_ADDRESS": None, "JOBS_DEBUG": None},
    )  # fmt: skip
    assert result.exit_code == code, result.stderr
    view = json.loads(result.stdout)
    assert view["status"] == status
    assert ray_client.get_job_status(view["submission_id"]).value == status
