"""The CLI against a real local Ray head: exit codes, streaming, restarts, stop, oversize dirs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
import ray
from ray.job_submission import JobStatus
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.client.net import free_port
from tests.jobs.conftest import REPO, Proxy, as_in_a_terminal, clean_env, run_cli, wait_until

runner = CliRunner()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_succeeding_run_streams_output_and_exits_0(ray_url):
    run = name("ok")
    done = run_cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--follow",
        "--",
        "python",
        "-c",
        "print('hello from' + ' the cluster')",
    )
    assert done.returncode == 0, done.stderr
    assert "hello from the cluster" in done.stdout
    assert f"{run}-a1" in done.stderr and "SUCCEEDED" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_failing_run_streams_output_and_exits_1(ray_url, ray_client):
    run = name("bad")
    done = run_cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--follow",
        "--",
        "python",
        "-c",
        "import sys; print('about to fail'); sys.exit(7)",
    )
    assert done.returncode == 1
    assert "about to fail" in done.stdout
    assert ray_client.get_job_status(f"{run}-a1") == JobStatus.FAILED


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_fail_then_resume_passes_with_one_restart(ray_url, tmp_path):
    run = name("resume")
    marker = tmp_path / "checkpoint"
    # Attempt 1 "checkpoints" (creates the marker) and dies; attempt 2 finds it and finishes,
    # as a framework resuming from its checkpoint directory would.
    script = (
        f"import os, sys; p = {str(marker)!r}\n"
        "if os.path.exists(p): print('resumed from checkpoint'); sys.exit(0)\n"
        "open(p, 'w').close(); print('first attempt dies'); sys.exit(1)"
    )
    # --max-restarts hands the run to its supervisor on the head; --follow follows it across
    # attempts (a short poll period keeps the test quick).
    done = run_cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--follow",
        "--max-restarts",
        "1",
        "--json",
        "--",
        "python",
        "-c",
        script,
        env=clean_env(JOBS_SUPERVISOR_POLL_S="0.5"),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["attempts"] == [
        {"submission_id": f"{run}-a1", "status": "FAILED"},
        {"submission_id": f"{run}-a2", "status": "SUCCEEDED"},
    ]
    assert "first attempt dies" in done.stderr and "resumed from checkpoint" in done.stderr
    listed = runner.invoke(app, ["list", "--json", "--address", ray_url])
    assert listed.exit_code == 0
    [group] = [r for r in json.loads(listed.stdout) if r["run"] == run]
    assert [(a["attempt"], a["status"]) for a in group["attempts"]] == [
        (1, "FAILED"),
        (2, "SUCCEEDED"),
    ]
    table = runner.invoke(app, ["list", "--address", ray_url], env={"COLUMNS": "250"})
    assert f"{run}-a1" in table.stdout and f"{run}-a2" in table.stdout


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_without_restarts_a_failure_is_final(ray_url):
    run = name("once")
    done = run_cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--max-restarts",
        "0",
        "--follow",
        "--json",
        "--",
        "python",
        "-c",
        "raise SystemExit(1)",
    )
    assert done.returncode == 1
    assert [a["submission_id"] for a in json.loads(done.stdout)["attempts"]] == [f"{run}-a1"]


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_stop_ends_a_followed_job_and_its_follower_reports_it(ray_url, ray_client):
    run = name("stopme")
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--follow",
            "--",
            "python",
            "-c",
            "import time; print('working', flush=True); time.sleep(600)",
        ],
        cwd=REPO,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: _status(ray_client, f"{run}-a1") == JobStatus.RUNNING, 60, "RUNNING")
        stopped = run_cli("stop", run, "--address", ray_url, "--json")
        assert stopped.returncode == 0, stopped.stderr
        assert json.loads(stopped.stdout) == {"submission_id": f"{run}-a1", "status": "STOPPED"}
        out, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert watcher.returncode == 1, err
    ids = [j.submission_id for j in ray_client.list_jobs()]
    assert f"{run}-a1" in ids and f"{run}-a2" not in ids


def _status(client, job_id):
    try:
        return client.get_job_status(job_id)
    except RuntimeError:
        return None


@pytest.mark.ray
def test_ctrl_c_detaches_without_stopping_the_job(ray_url, ray_client):
    run = name("detach")
    follower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--follow",
            "--",
            "python",
            "-c",
            "import time; print('tick', flush=True); time.sleep(600)",
        ],
        cwd=REPO,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )
    try:
        wait_until(lambda: _status(ray_client, f"{run}-a1") == JobStatus.RUNNING, 60, "RUNNING")
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
        assert follower.returncode == 0
        assert "detached" in err and f"python -m jobs stop {run}-a1 --address {ray_url}" in err
        assert "Traceback" not in err
        assert ray_client.get_job_status(f"{run}-a1") == JobStatus.RUNNING
    finally:
        if follower.poll() is None:
            follower.kill()
        ray_client.stop_job(f"{run}-a1")


@pytest.mark.ray
def test_submit_without_follow_returns_at_once_and_status_logs_work(ray_url, ray_client):
    run = name("quick")
    result = runner.invoke(
        app,
        [
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--json",
            "--",
            "python",
            "-c",
            "print('logged line')",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["submission_id"] == f"{run}-a1"
    logs = runner.invoke(app, ["logs", f"{run}-a1", "--follow", "--address", ray_url])
    assert logs.exit_code == 0 and "logged line" in logs.stdout
    status = runner.invoke(app, ["status", run, "--json", "--address", ray_url])
    view = json.loads(status.stdout)
    assert (view["submission_id"], view["status"], view["attempt"]) == (f"{run}-a1", "SUCCEEDED", 1)
    assert len(view["git_commit"].split("-")[0]) == 40
    again = runner.invoke(app, ["run", "--address", ray_url, "--name", run, "--", "true"])
    assert again.exit_code == 2 and "already exists" in again.stderr


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_unknown_job_is_a_usage_error(ray_url):
    done = run_cli("status", "no-such-job-a1", "--address", ray_url)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no-such-job-a1" in done.stderr


@pytest.mark.subprocess_cli
def test_unreachable_address_exits_3_with_one_line():
    done = run_cli("run", "--address", f"http://127.0.0.1:{free_port()}", "--follow", "--", "true")
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "hint:" in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_ray_address_env_is_used_when_no_flag(ray_url):
    done = run_cli("list", "--json", env=clean_env(RAY_ADDRESS=ray_url.removeprefix("http://")))
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), list)


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_address_flag_beats_a_stale_ray_address(ray_url):
    # Ray's own client would let RAY_ADDRESS override the address it is given.
    env = clean_env(
        RAY_ADDRESS=f"127.0.0.1:{free_port()}", RAY_API_SERVER_ADDRESS="http://127.0.0.1:1"
    )
    done = run_cli("list", "--json", "--address", ray_url, env=env)
    assert done.returncode == 0, done.stderr


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_oversize_working_dir_is_refused_before_upload(ray_url, ray_client, tmp_path):
    for i in range(3):
        (tmp_path / f"weights{i}.bin").write_bytes(os.urandom(35 * 1024 * 1024))
    (tmp_path / "main.py").write_text("print('never runs')\n")
    before = {j.submission_id for j in ray_client.list_jobs()}
    done = run_cli(
        "run", "--address", ray_url, "--working-dir", str(tmp_path), "--", "python", "main.py"
    )
    assert done.returncode == 2
    assert "weights" in done.stderr and "100.0 MiB" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert {j.submission_id for j in ray_client.list_jobs()} == before


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_small_working_dir_is_uploaded_and_runs(ray_url, tmp_path):
    (tmp_path / "main.py").write_text("print('from the uploaded dir')\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "junk").write_bytes(os.urandom(1024))
    done = run_cli(
        "run",
        "--address",
        ray_url,
        "--working-dir",
        str(tmp_path),
        "--follow",
        "--",
        "python",
        "-c",
        "import os; exec(open('main.py').read()); "
        "print('git shipped' if os.path.exists('.git') else 'no git')",
    )
    assert done.returncode == 0, done.stderr
    assert "from the uploaded dir" in done.stdout and "no git" in done.stdout
    # Ray's client logged "INFO dashboard_sdk.py:371 -- Uploading package ..." here.
    assert "Uploading package" not in done.stderr and "Creating a file package" not in done.stderr


@pytest.mark.ray
def test_recipe_submit_on_a_bare_address_notes_a_ray_version_no_framework_pins(ray_url, ray_client):
    # The local head runs the client's Ray (2.60), which neither framework image ships: a note.
    run = name("recipe")
    result = runner.invoke(
        app, ["submit", "nemo-rl-grpo-math", "--address", ray_url, "--name", run, "--json"]
    )
    assert result.exit_code == 0, result.stderr
    assert (
        f"note: framework not checked: {ray_url} runs Ray {ray.__version__}, which no "
        "framework image pins"
    ) in result.stderr
    # There was no word that the CPU-only cluster cannot hold the recipe's 8 x 8 GPUs.
    assert re.search(
        r"warning: the cluster has \d+ GPU\(s\) now and this run needs 64;", result.stderr
    ), result.stderr
    info = ray_client.get_job_info(f"{run}-a1")
    assert info.metadata["recipe"] == "nemo-rl-grpo-math" and info.metadata["run"] == run
    assert info.runtime_env["env_vars"]["RAY_OVERRIDE_JOB_RUNTIME_ENV"] == "1"
    wait_until(lambda: ray_client.get_job_status(f"{run}-a1").is_terminal(), 60, "terminal")


@pytest.mark.ray
def test_a_duplicate_run_whose_name_contains_404_is_reported_as_existing(ray_url):
    # Ray's 500 for a duplicate repeats the id; an id with "404" once read as "no such job".
    run = f"dup-404-{uuid.uuid4().hex[:6]}"
    first = runner.invoke(app, ["run", "--address", ray_url, "--name", run, "--", "true"])
    assert first.exit_code == 0, first.stderr
    again = runner.invoke(app, ["run", "--address", ray_url, "--name", run, "--", "true"])
    assert again.exit_code == 2
    assert again.stderr.startswith(f"error: run '{run}' already exists on this cluster")


def _follow_through(
    proxy: Proxy, run: str, script: str, patience: str, sink
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "run",
            "--address",
            proxy.url,
            "--name",
            run,
            "--follow",
            "--",
            "python",
            "-c",
            script,
        ],
        cwd=REPO,
        env=clean_env(JOBS_RECONNECT_TIMEOUT=patience),
        stdout=sink,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.ray
def test_losing_the_dashboard_while_following_exits_3_with_how_to_check_later(
    ray_url, ray_client, tmp_path
):
    run = name("lost")
    proxy = Proxy(ray_url)
    streamed = tmp_path / "stdout"
    try:
        with streamed.open("w") as sink:
            proc = _follow_through(
                proxy, run, "import time; print('tick', flush=True); time.sleep(600)", "3", sink
            )
        wait_until(lambda: "tick" in streamed.read_text(), 60, "the CLI to stream")
        proxy.stop()  # the websocket closes with 1006, then every request is refused
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, err
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: lost the Ray dashboard for 3 s while watching {run}-a1")
        assert (
            "(hint: the job may still be running; check it with: python -m jobs status "
            f"{run}-a1 --address {proxy.url})"
        ) in last
        assert "Traceback" not in err
        assert ray_client.get_job_status(f"{run}-a1") == JobStatus.RUNNING
    finally:
        proxy.stop()
        if proc.poll() is None:
            proc.kill()
        ray_client.stop_job(f"{run}-a1")


@pytest.mark.ray
@pytest.mark.parametrize("ends_while_away", [False, True])
def test_a_dashboard_back_within_the_window_resumes_the_stream_without_repeats(
    ray_url, ray_client, tmp_path, ends_while_away
):
    run = name("back")
    proxy = Proxy(ray_url)
    go = tmp_path / "go"
    script = (
        f"import os, time; print('before', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.2)\n"
        "print('after', flush=True)"
    )
    streamed = tmp_path / "stdout"
    try:
        with streamed.open("w") as sink:
            proc = _follow_through(proxy, run, script, "60", sink)
        wait_until(lambda: "before" in streamed.read_text(), 60, "the CLI to stream")
        proxy.stop()
        if ends_while_away:
            # The job logs its last line and ends while the CLI cannot see it.
            go.touch()
            wait_until(lambda: ray_client.get_job_status(f"{run}-a1").is_terminal(), 60, "end")
        else:
            time.sleep(3)
        proxy.start()
        go.touch()
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err
        lines = streamed.read_text().splitlines()
        # Ray re-sends the log from its start on every tail; nothing may be printed twice.
        assert lines.count("before") == 1 and lines.count("after") == 1, lines
        assert len(lines) == len(set(lines)), lines
    finally:
        proxy.stop()
        if proc.poll() is None:
            proc.kill()


def _recipe_run_that_failed(ray_url: str, ray_client) -> str:
    # On this CPU head the NeMo RL entrypoint fails at once (no /opt/nemo-rl): a failed a1.
    run = name("resume-me")
    done = run_cli(
        "submit",
        "nemo-rl-grpo-math",
        "--address",
        ray_url,
        "--name",
        run,
        "--set",
        "grpo.max_num_steps=3",
        "--follow",
    )
    assert done.returncode == 1, done.stderr
    assert ray_client.get_job_status(f"{run}-a1") == JobStatus.FAILED
    return run


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_resume_submits_the_next_attempt_with_the_same_checkpoint_dir_and_overrides(
    ray_url, ray_client
):
    run = _recipe_run_that_failed(ray_url, ray_client)
    first = ray_client.get_job_info(f"{run}-a1")
    # Without restarts: a supervisor would wait for the recipe's 64 GPUs on this CPU head
    # (tests/jobs/runs/test_handoff.py covers a supervised resume).
    done = run_cli("submit", "--resume", run, "--address", ray_url, "--follow", "--json")
    # The next attempt fails the same way.
    assert done.returncode == 1, done.stderr
    assert [a["submission_id"] for a in json.loads(done.stdout)["attempts"]] == [f"{run}-a2"]
    second = ray_client.get_job_info(f"{run}-a2")
    assert second.metadata["attempt"] == "2"
    assert (
        second.metadata["checkpoint_dir"]
        == first.metadata["checkpoint_dir"]
        == f"/lustre/runs/{run}/checkpoints"
    )
    assert second.entrypoint == first.entrypoint and "grpo.max_num_steps=3" in second.entrypoint
    for key in ("recipe", "overrides", "nodes", "gpus_per_node", "run"):
        assert second.metadata[key] == first.metadata[key]
    assert f"resuming run {run} after {run}-a1 FAILED" in done.stderr


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_resume_refuses_a_running_a_succeeded_and_a_command_run(ray_url, ray_client):
    busy = name("busy")
    ray_client.submit_job(
        entrypoint="sleep 600",
        submission_id=f"{busy}-a1",
        metadata={"run": busy, "attempt": "1", "kind": "recipe", "recipe": "nemo-rl-grpo-math"},
    )
    try:
        done = run_cli("submit", "--resume", busy, "--address", ray_url)
        assert done.returncode == 2
        assert done.stderr.startswith(f"error: run {busy} is still ")
    finally:
        ray_client.stop_job(f"{busy}-a1")
    ok = name("fine")
    assert (
        run_cli("run", "--address", ray_url, "--name", ok, "--follow", "--", "true").returncode == 0
    )
    done = run_cli("submit", "--resume", ok, "--address", ray_url)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: run {ok} already SUCCEEDED ({ok}-a1); nothing to resume")
    bad = name("cmd")
    assert (
        run_cli("run", "--address", ray_url, "--name", bad, "--follow", "--", "false").returncode
        == 1
    )
    # A `run` run resumes as it ran: a recipe (or --set) given with it is refused, not applied.
    done = run_cli("submit", "verl-grpo-gsm8k", "--resume", bad, "--address", ray_url)
    assert done.returncode == 2
    assert f"run {bad} was started with `run -- COMMAND`: it is resumed as it ran" in done.stderr
    ids = {j.submission_id for j in ray_client.list_jobs()}
    assert not {f"{busy}-a2", f"{ok}-a2", f"{bad}-a2"} & ids
    done = run_cli("submit", "--resume", "no-such-run", "--address", ray_url)
    assert done.returncode == 2 and "no run named 'no-such-run'" in done.stderr
