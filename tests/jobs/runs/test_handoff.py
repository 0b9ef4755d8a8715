"""Supervised runs on a real local Ray cluster: restarts survive the CLI, wait for GPUs, stop, crash.

The GPUs are a second local raylet (`ray start --address ... --num-gpus 2`) that a test takes
away and brings back, as a reclaimed spot node and its replacement. Poll, settle and progress
periods are shortened through the supervisor's env knobs (jobs/head/supervisor.py).
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.job_submission import JobStatus
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.head import events as ev
from tests.jobs.conftest import REPO, as_in_a_terminal, clean_env, wait_until
from tests.jobs.gpu_node import GpuNode, joined, wait_gpus

pytestmark = pytest.mark.ray

FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="1",
    JOBS_SUPERVISOR_PROGRESS_S="2",
    JOBS_SUPERVISOR_MAX_WAIT_S="180",
)


def env() -> dict[str, str]:
    return clean_env(**FAST)


class Done:
    """A CLI result with the names of a finished process (returncode, stdout, stderr)."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*args: str) -> Done:
    """`python -m jobs ARGS` in this process (a fresh interpreter costs ~3 s of Ray imports on
    this 2-core machine); the one run that must die with SIGKILL is a real process."""
    result = CliRunner().invoke(
        app, list(args), env={**FAST, "RAY_ADDRESS": None, "COLUMNS": "250"}
    )
    return Done(result.exit_code, result.stdout, result.stderr)


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def gpu_node(ray_head) -> Iterator[GpuNode]:
    with joined(ray_head, 2) as node:
        yield node


def _status(client, job_id):
    try:
        return client.get_job_status(job_id)
    except RuntimeError:
        return None


def _ids(client) -> set[str]:
    return {j.submission_id for j in client.list_jobs()}


def _story(ray_url: str, run: str) -> dict:
    done = cli("status", run, "--json", "--address", ray_url)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _events(ray_url: str, run: str) -> list[str]:
    return [e["event"] for e in _story(ray_url, run)["history"]]


def _waits_after_its_end(ray_url: str, run: str) -> bool:
    """The supervisor waits for GPUs after attempt 1 ended (a wait before attempt 1, while the
    state API has not yet listed a node that just joined, is not the one a test waits for)."""
    events = _events(ray_url, run)
    return ev.ATTEMPT_ENDED in events and ev.WAITING in events[events.index(ev.ATTEMPT_ENDED) :]


def _fails_once(marker: Path, go: Path | None = None) -> str:
    """Attempt 1 leaves a marker (its "checkpoint") and fails, after `go` exists if given;
    a later attempt finds the marker and succeeds."""
    wait = f"while not os.path.exists({str(go)!r}): time.sleep(0.2)\n" if go else ""
    return (
        f"import os, sys, time; p = {str(marker)!r}\n"
        "if os.path.exists(p): print('resumed'); sys.exit(0)\n"
        f"open(p, 'w').close(); print('attempt 1 running', flush=True)\n{wait}"
        "print('attempt 1 dies', flush=True); sys.exit(1)"
    )


def _read_until(proc: subprocess.Popen[str], needle: str, timeout: float = 90) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {needle!r} on stderr within {timeout} s: {seen}")
        ready, _, _ = select.select([proc.stderr], [], [], left)
        if ready:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError(f"CLI ended before {needle!r}: {seen}")
            seen += line
    return seen


def test_restarts_go_on_after_the_cli_is_killed_with_sigkill(ray_url, ray_client, tmp_path):
    run = name("survive")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--max-restarts",
            "2",
            "--",
            "python",
            "-c",
            _fails_once(tmp_path / "ckpt"),
        ],
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = _read_until(proc, "handed to its supervisor")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert f"run {run} handed to its supervisor {run}-s1" in said

    def attempts() -> list[tuple[int, str]]:
        done = cli("list", "--json", "--address", ray_url)
        assert done.returncode == 0, done.stderr
        [group] = [r for r in json.loads(done.stdout) if r["run"] == run]
        return [(a["attempt"], a["status"]) for a in group["attempts"]]

    wait_until(lambda: attempts() == [(1, "FAILED"), (2, "SUCCEEDED")], 60, "a1 FAILED, a2 OK")
    wait_until(lambda: _status(ray_client, f"{run}-s1") == JobStatus.SUCCEEDED, 30, "supervisor")
    story = cli("status", run, "--address", ray_url)
    assert story.returncode == 0, story.stderr
    lines = story.stdout
    assert f"supervisor: {run}-s1 SUCCEEDED" in lines
    assert f"outcome: run {run} succeeded ({run}-a2)" in lines
    order = [
        f"submitted {run}-a1",
        f"{run}-a1 FAILED (exit code 1)",
        f"submitted {run}-a2",
        "restart 1 of 2",
        f"{run}-a2 SUCCEEDED",
    ]
    positions = [lines.index(text) for text in order]
    assert positions == sorted(positions), lines
    logs = cli("logs", run, "--address", ray_url)
    assert "[supervisor]" in logs.stdout and "resumed" in logs.stdout
    listed = json.loads(cli("list", "--json", "--address", ray_url).stdout)
    [group] = [r for r in listed if r["run"] == run]
    assert group["supervisor"]["last_event"]["event"] == "finished"


def test_a_run_waits_for_its_gpus_and_a_stop_during_the_wait_resubmits_nothing(
    ray_url, ray_client, gpu_node, tmp_path
):
    back, stopped = name("wait"), name("stopwait")
    go = tmp_path / "go"
    for run in (back, stopped):
        done = cli(
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--cluster-gpus",  # two runs at once: neither driver reserves the node's GPUs
            "2",
            "--max-restarts",
            "1",
            "--",
            "python",
            "-c",
            _fails_once(tmp_path / f"{run}.ckpt", go),
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == run
    for run in (back, stopped):
        wait_until(
            lambda run=run: _status(ray_client, f"{run}-a1") == JobStatus.RUNNING, 60, "a1 runs"
        )
    gpu_node.stop()  # the spot node is reclaimed...
    wait_gpus(ray_url, 0)
    go.touch()  # ...and the attempts die with it
    try:
        for run in (back, stopped):
            wait_until(lambda run=run: _waits_after_its_end(ray_url, run), 60, f"{run} waiting")
        human = cli("status", back, "--address", ray_url).stdout
        assert f"{back}-a1 FAILED" in human, human
        assert "the cluster has 0 GPUs (2 needed)" in human, human
        assert "waiting for 2 GPUs since " in human, human
        # About to restart: the run waits (its latest attempt a1 FAILED), as `list` says.
        assert _story(ray_url, back)["status"] == "WAITING"

        halt = cli("stop", stopped, "--address", ray_url, "--json")
        assert halt.returncode == 0, halt.stderr
        assert json.loads(halt.stdout) == {
            "run": stopped,
            "stopped": [{"submission_id": f"{stopped}-s1", "status": "STOPPED"}],
        }
    finally:
        gpu_node.join()  # the replacement node joins
    wait_until(lambda: _status(ray_client, f"{back}-a2") == JobStatus.SUCCEEDED, 90, "a2 OK")
    wait_until(lambda: _status(ray_client, f"{back}-s1") == JobStatus.SUCCEEDED, 30, "its end")
    events = _events(ray_url, back)
    assert events[-4:] == ["gpus_back", "submitted", "attempt_ended", "finished"], events
    time.sleep(3)  # six poll periods: a stopped supervisor never comes back
    assert f"{stopped}-a2" not in _ids(ray_client)
    story = _story(ray_url, stopped)
    assert story["outcome"]["event"] == "stopped" and story["supervisor"]["status"] == "STOPPED"


def test_a_crash_with_every_gpu_present_is_tried_twice_whatever_max_restarts(
    ray_url, ray_client, gpu_node
):
    run = name("crash")
    done = cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--gpus",
        "2",
        "--max-restarts",
        "5",
        "--follow",
        "--json",
        "--",
        "python",
        "-c",
        "print('bad config', flush=True); raise SystemExit(3)",
    )
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["attempts"] == [
        {"submission_id": f"{run}-a1", "status": "FAILED"},
        {"submission_id": f"{run}-a2", "status": "FAILED"},
    ], done.stderr  # the supervisor's story says why an attempt was not one of the two
    assert result["outcome"]["reason"] == "crash"
    assert "[supervisor]" in done.stderr and "bad config" in done.stderr
    assert f"{run}-a3" not in _ids(ray_client)
    human = cli("status", run, "--address", ray_url).stdout
    assert (
        "outcome: gave up: crash, not a preemption: the attempt failed with every GPU "
        "present (2 of 2 needed), no node lost, no new checkpoint since the previous "
        "failure and no training step completed" in human
    )


def test_new_checkpoints_keep_restarts_going(ray_url, tmp_path):
    run = name("progress")
    ckpt = tmp_path / "checkpoints"
    # Each attempt saves a new entry and fails, until the second one exists: the second failure
    # is not a crash (it checkpointed), so the third attempt runs. (A plain command's entries
    # count as they are; `step_N` / `global_step_N` names are judged by the frameworks' rule.)
    script = (
        f"import os, sys; d = {str(ckpt)!r}; os.makedirs(d, exist_ok=True)\n"
        "n = len(os.listdir(d))\n"
        "if n >= 2: print('done'); sys.exit(0)\n"
        "os.makedirs(os.path.join(d, f'save_{n + 1}')); sys.exit(1)"
    )
    done = cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--max-restarts",
        "2",
        "--checkpoint-dir",
        str(ckpt),
        "--follow",
        "--json",
        "--",
        "python",
        "-c",
        script,
    )
    assert done.returncode == 0, done.stderr
    assert [a["status"] for a in json.loads(done.stdout)["attempts"]] == [
        "FAILED",
        "FAILED",
        "SUCCEEDED",
    ]


def test_resume_re_arms_a_run_whose_supervisor_is_gone_and_one_supervisor_at_a_time(
    ray_url, ray_client
):
    run = name("rearm")
    # On this CPU head the NeMo RL entrypoint fails at once (no /opt/nemo-rl): a failed a1.
    first = cli("submit", "nemo-rl-grpo-math", "--address", ray_url, "--name", run, "--follow")
    assert first.returncode == 1, first.stderr
    armed = cli("submit", "--resume", run, "--address", ray_url, "--max-restarts", "1", "--json")
    assert armed.returncode == 0, armed.stderr
    assert json.loads(armed.stdout)["supervisor"] == f"{run}-s1"
    # The recipe's size (8 nodes x 8 GPUs) is missing on this cluster: it waits, a2 not yet sent.
    wait_until(lambda: "waiting" in _events(ray_url, run), 60, "waiting for 64 GPUs")
    assert "waiting for 64 GPUs" in _story(ray_url, run)["history"][-1]["message"]
    again = cli("submit", "--resume", run, "--address", ray_url, "--max-restarts", "1")
    assert again.returncode == 2
    assert f"run {run} is already driven by its supervisor {run}-s1" in again.stderr
    assert cli("stop", run, "--address", ray_url).returncode == 0
    # The supervisor is gone: --resume arms a new one, with the next deterministic id.
    rearmed = cli("submit", "--resume", run, "--address", ray_url, "--max-restarts", "1", "--json")
    assert rearmed.returncode == 0, rearmed.stderr
    assert json.loads(rearmed.stdout)["supervisor"] == f"{run}-s2"
    assert cli("stop", run, "--address", ray_url).returncode == 0
    ids = _ids(ray_client)
    assert {f"{run}-s1", f"{run}-s2", f"{run}-a1"} <= ids and f"{run}-a2" not in ids


def test_a_supervised_runs_attempts_reserve_what_run_was_given(ray_url, ray_client, gpu_node):
    """Supervised, `run` sent its attempts without --gpus/--cpus/--resource
    (the CLI refused the last two outright). Ray's job record does not show an entrypoint's
    reservations, so their effect is checked: with --gpus the attempt's driver sees its GPU in
    CUDA_VISIBLE_DEVICES; with --cpus the cluster counts the CPU as held while it runs."""
    run = name("reserve-gpu")
    probe = "import os; print('devices', os.environ.get('CUDA_VISIBLE_DEVICES'), flush=True)"
    done = cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--gpus",
        "1",
        "--max-restarts",
        "1",
        "--follow",
        "--",
        "python",
        "-c",
        probe,
    )
    assert done.returncode == 0, done.stderr
    logs = ray_client.get_job_logs(f"{run}-a1")
    assert "devices " in logs and "devices None" not in logs, logs

    run = name("reserve-cpu")
    held = (
        "import ray; ray.init(address='auto', log_to_driver=False); "
        "print('held', ray.cluster_resources()['CPU'] - ray.available_resources().get('CPU', 0), "
        "flush=True)"
    )
    done = cli(
        "run",
        "--address",
        ray_url,
        "--name",
        run,
        "--cpus",
        "1",
        "--max-restarts",
        "1",
        "--follow",
        "--",
        "python",
        "-c",
        held,
    )
    assert done.returncode == 0, done.stderr
    logs = ray_client.get_job_logs(f"{run}-a1")
    [line] = [t for t in logs.splitlines() if t.startswith("held ")]
    assert float(line.split()[1]) >= 1.0, logs  # unreserved, the driver holds no CPU


def test_a_runs_root_missing_on_the_head_is_refused_and_never_created(
    ray_url, ray_client, tmp_path
):
    """The supervisor created a mistyped runs root silently, so the run's record
    went where the re-armer never looks."""
    typo = tmp_path / "lustre" / "rnus"
    run = name("typo")
    done = cli(
        "run", "--address", ray_url, "--name", run, "--runs-root", str(typo),
        "--max-restarts", "1", "--", "python", "-c", "print(1)",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"the runs root {typo} does not exist on the Ray head" in done.stderr, done.stderr
    # One line that says it once (it was 900 characters: the supervisor's record, the same
    # reason on its stderr, and Ray's banner).
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: the supervisor {run}-s1 refused the run: the runs root")
    assert line.count("does not exist on the Ray head") == 1 and "{" not in line, line
    assert len(line) < 500, line
    assert not typo.exists() and not typo.parent.exists()
    assert f"{run}-a1" not in _ids(ray_client)


def test_no_wait_returns_at_submit_and_status_then_says_the_supervisor_refused(
    ray_url, ray_client, tmp_path
):
    """`--no-wait` returns once the supervisor is submitted, as
    `ray job submit --no-wait` does; what the supervisor then refuses is what `status` shows."""
    typo = tmp_path / "lustre" / "rnus"
    run = name("nowait")
    done = cli(
        "run", "--address", ray_url, "--name", run, "--runs-root", str(typo),
        "--max-restarts", "1", "--no-wait", "--", "python", "-c", "print(1)",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == run
    assert f"supervisor {run}-s1 submitted, not waited for (--no-wait)" in done.stderr
    wait_until(
        lambda: ray_client.get_job_status(f"{run}-s1").is_terminal(),
        timeout=60,
        what="the supervisor's refusal",
    )
    status = cli("status", run, "--address", ray_url)
    assert f"the runs root {typo} does not exist on the Ray head" in status.stdout + status.stderr
    assert not typo.exists() and f"{run}-a1" not in _ids(ray_client)


def test_a_hand_off_waits_until_a_supervisor_of_the_same_code_took_a_run_under_its_runs_root(
    ray_url, ray_client, tmp_path
):
    """Waiting for the supervisor's `armed` record costs Ray's driver
    start (~3 x `ray job submit --no-wait`). It is what tells a head without Ray, or a runs root
    missing there; once a supervisor of the same code took a run under the same runs root on
    this cluster, the next hand-off returns at submit. A refused one vouches for nothing."""
    from jobs.client.dashboard import Dashboard
    from jobs.runs import handoff

    root, other, typo = tmp_path / "runs", tmp_path / "other", tmp_path / "rnus"
    root.mkdir()
    other.mkdir()

    def hand_off(run: str, where: Path, *flags: str) -> Done:
        return cli(
            "run", "--address", ray_url, "--name", run, "--runs-root", str(where),
            "--max-restarts", "1", *flags, "--", "python", "-c", "import time; time.sleep(60)",
        )  # fmt: skip

    # A refused start vouches for nothing: the second hand-off there waits and fails too.
    for _ in range(2):
        refused = hand_off(name("typo"), typo)
        assert refused.returncode == 2 and "does not exist on the Ray head" in refused.stderr

    first, second, elsewhere, asked = (name(p) for p in ("first", "second", "else", "asked"))
    done = hand_off(first, root)
    assert done.returncode == 0 and "not waited for" not in done.stderr, done.stderr
    assert ev.ARMED in _events(ray_url, first)

    done = hand_off(second, root)
    assert done.returncode == 0, done.stderr
    assert (
        f"supervisor {second}-s1 submitted, not waited for ({first}-s1 of the same code took "
        "its run here)"
    ) in done.stderr
    wait_until(
        lambda: ev.ARMED in _events(ray_url, second),
        timeout=60,
        what="the unwaited supervisor taking its run",
    )

    done = hand_off(elsewhere, other)
    assert done.returncode == 0 and "not waited for" not in done.stderr, done.stderr
    done = hand_off(asked, root, "--wait")
    assert done.returncode == 0 and "not waited for" not in done.stderr, done.stderr

    # Same runs root, other code: Ray's package URI is a hash of the files.
    dash = Dashboard(ray_url)
    listed = dash.jobs()
    ours = ray_client.get_job_info(f"{first}-s1").runtime_env
    assert handoff.vouching_supervisor(dash, listed, ours, str(root)) in {
        f"{r}-s1" for r in (first, second, asked)
    }
    changed = {**ours, "py_modules": ["gcs://_ray_pkg_0123456789abcdef.zip"]}
    assert handoff.vouching_supervisor(dash, listed, changed, str(root)) is None
    for run in (first, second, elsewhere, asked):
        cli("stop", run, "--address", ray_url)


def test_no_wait_with_follow_is_refused_naming_both_flags():
    done = cli(
        "run", "--address", "http://127.0.0.1:9", "--max-restarts", "1", "--no-wait",
        "--follow", "--", "true",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--no-wait cannot be combined with --follow" in done.stderr


def test_a_relative_checkpoint_dir_is_refused():
    done = cli(
        "run",
        "--address",
        "http://127.0.0.1:9",
        "--max-restarts",
        "1",
        "--checkpoint-dir",
        "ckpt",
        "--",
        "true",
    )
    assert done.returncode == 2 and "--checkpoint-dir 'ckpt'" in done.stderr


@pytest.fixture(autouse=True)
def _no_leftover_supervisors(ray_client) -> Iterator[None]:
    yield
    # Every supervisor a test armed has ended or is stopped here: none keeps polling the head.
    for job in ray_client.list_jobs():
        if (job.metadata or {}).get("kind") == "supervisor" and not job.status.is_terminal():
            ray_client.stop_job(job.submission_id)
            run = job.metadata["run"]
            for other in ray_client.list_jobs():
                if (other.metadata or {}).get("run") == run and not other.status.is_terminal():
                    ray_client.stop_job(other.submission_id)


def test_ctrl_c_while_following_detaches_only_the_cli(ray_url, ray_client):
    run = name("detach")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs",
            "run",
            "--address",
            ray_url,
            "--name",
            run,
            "--max-restarts",
            "1",
            "--follow",
            "--",
            "python",
            "-c",
            "import time; print('tick', flush=True); time.sleep(600)",
        ],
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )
    try:
        wait_until(lambda: _status(ray_client, f"{run}-a1") == JobStatus.RUNNING, 60, "a1 runs")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert f"detached; the supervisor {run}-s1 keeps driving run {run}" in err
        assert _status(ray_client, f"{run}-s1") == JobStatus.RUNNING
        assert _status(ray_client, f"{run}-a1") == JobStatus.RUNNING
        halt = cli("stop", run, "--address", ray_url, "--json")
        # The supervisor stops its attempt itself on SIGTERM, so a1 may be STOPPED already.
        stopped = {(s["submission_id"], s["status"]) for s in json.loads(halt.stdout)["stopped"]}
        assert (f"{run}-s1", "STOPPED") in stopped
        assert stopped <= {(f"{run}-s1", "STOPPED"), (f"{run}-a1", "STOPPED")}
        assert _status(ray_client, f"{run}-a1") == JobStatus.STOPPED
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_head_whose_python_lacks_ray_is_named_as_the_cause(ray_url, ray_client):
    """The hand-off failed with a bare ModuleNotFoundError. The system python3 here
    has no Ray: a real interpreter failing the import the supervisor's first line makes."""
    from jobs.client.dashboard import Dashboard
    from jobs.common.errors import UsageError
    from jobs.runs import handoff

    sid = f"{name('noray')}-s1"
    ray_client.submit_job(entrypoint="/usr/bin/python3 -c 'import ray'", submission_id=sid)
    with pytest.raises(UsageError) as e:
        handoff._wait_armed(Dashboard(ray_url), sid, f" --address {ray_url}")
    assert "the Ray head's `python` has no `ray` module" in e.value.message
    assert "Python environment Ray is installed in first on PATH" in (e.value.hint or "")


def test_a_supervisor_ray_failed_before_its_driver_ran_says_rays_reason(ray_url, ray_client):
    """A supervisor job that Ray fails before its driver prints a line (its runtime env could
    not be set up) has an empty log: the error gives Ray's own message instead of nothing."""
    from jobs.client.dashboard import Dashboard
    from jobs.common.errors import UsageError
    from jobs.runs import handoff

    sid = f"{name('noenv')}-s1"
    missing = "gcs://_ray_pkg_0123456789abcdef0123456789abcdef.zip"  # never uploaded
    ray_client.submit_job(
        entrypoint="true", submission_id=sid, runtime_env={"py_modules": [missing]}
    )
    with pytest.raises(UsageError) as e:
        handoff._wait_armed(Dashboard(ray_url), sid, f" --address {ray_url}")
    assert "before it took the run: Ray: " in e.value.message
    assert e.value.message.rstrip().endswith("run:") is False


def test_list_annotates_supervised_runs_from_the_listing_it_grouped_them_from():
    """`list` lists the cluster's jobs once: annotate reads the supervisors' logs for the rows
    and their outcome from the jobs it is given, not from a second listing."""
    from jobs.client.types import JobDetails
    from jobs.client.types import JobStatus as Status
    from jobs.runs import handoff

    sup = JobDetails(
        status=Status.SUCCEEDED,
        entrypoint="python -m jobs.head.supervisor",
        submission_id="r-s1",
        metadata={"run": "r", "kind": "supervisor"},
    )
    done = ev.line("finished", "r", "run r succeeded (r-a1)")

    class OneListing:
        def jobs(self) -> list[JobDetails]:
            raise AssertionError("the cluster's jobs were listed a second time")

        def logs(self, job_id: str) -> str:
            assert job_id == "r-s1"
            return f"some Ray line\n{done}\n"

    rows = [{"run": "r", "supervisor": {"submission_id": "r-s1", "status": "SUCCEEDED"}}]
    handoff.annotate(OneListing(), rows, [sup])  # type: ignore[arg-type]
    assert rows[0]["supervisor"]["last_event"]["message"] == "run r succeeded (r-a1)"
    assert rows[0]["supervisor"]["outcome"] == "finished"


def test_a_runs_small_jobs_are_numbered_within_the_run_above_any_taken():
    """A run's first stop was named `RUN-stop4` (the cluster's stops were counted)."""
    from jobs.client.types import JobDetails
    from jobs.runs.handoff import next_small_job

    def job(sid: str) -> JobDetails:
        return JobDetails(submission_id=sid, entrypoint="x", status="SUCCEEDED", type="SUBMISSION")

    others = [job(f"other-stop{n}") for n in (1, 2, 3)]
    assert next_small_job(others, "pre2", "stop") == 1
    # an id an older numbering took is never reused
    assert next_small_job([*others, job("pre2-stop4")], "pre2", "stop") == 5
    assert next_small_job([job("pre2-ckpts1"), job("pre2-a1")], "pre2", "stop") == 1
    assert next_small_job([job("pre2-x-stop1")], "pre2", "stop") == 1
