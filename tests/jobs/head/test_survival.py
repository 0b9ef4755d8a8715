"""Runs that survive spot, on a real local Ray cluster: a head whose GCS notices a
lost node within seconds (RAY_health_check_*; production Ray takes up to ~50 s, which the
settle wait covers), and GPU raylets SIGKILLed (a reclaimed spot VM) and replaced.

The knobs are shortened through the supervisor's documented env settings (jobs/head/protocol.py Settings).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray  # noqa: F401  (makes Ray's vendored psutil importable)

# isort: split
import psutil  # Ray's vendored copy, importable once `ray` is imported
from typer.testing import CliRunner

from jobs.cli.app import app
from jobs.client.api import JobsAPI
from jobs.head.run_store import RunStore
from tests import localray
from tests.jobs.conftest import wait_until
from tests.jobs.gpu_node import GpuNode, close_all

FAST = dict(
    JOBS_SUPERVISOR_POLL_S="0.5",
    JOBS_SUPERVISOR_SETTLE_S="3",
    JOBS_SUPERVISOR_PROGRESS_S="5",
    JOBS_SUPERVISOR_MAX_WAIT_S="300",
    JOBS_SUPERVISOR_LEASE_S="3",
)
FAST_HEALTH = localray.FAST_HEALTH

pytestmark = pytest.mark.ray


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


@pytest.fixture(scope="module")
def head() -> Iterator[localray.LocalRay]:
    h = localray.start(num_cpus=2, extra_env=FAST_HEALTH)
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture
def gpu(head) -> Iterator[list[GpuNode]]:
    """The GPU node of the moment (a list: a test replaces it); every one is stopped after."""
    nodes = [GpuNode(head, gpus=2)]
    try:
        nodes[0].join()
        yield nodes
    finally:
        try:
            close_all(nodes)
        finally:
            _stop_everything(head)


def _stop_everything(head: localray.LocalRay) -> None:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(head.dashboard_url)
    jobs = client.list_jobs()
    for kind_first in (True, False):  # supervisors first: nothing is resubmitted after
        for job in jobs:
            is_sup = (job.metadata or {}).get("kind") == "supervisor"
            if is_sup == kind_first and not job.status.is_terminal():
                client.stop_job(job.submission_id)


def preempt(head: localray.LocalRay, nodes: list[GpuNode], replace: bool = True) -> None:
    """SIGKILL the GPU raylet's whole tree (a reclaimed VM says no goodbye), and start its
    replacement at once (`replace`), returning once the cluster counts the replacement's GPUs.
    Its `ray start` is started again if it gave up: on a loaded machine it can time out joining
    ("The current node timed out during startup", node.py), and the run would wait for GPUs
    that never come (seen here under two suites on two cores)."""
    nodes[-1].kill()
    if not replace:
        return
    replacement = GpuNode(head, gpus=2)
    nodes.append(replacement)
    replacement.join(timeout=180)


def gpu_script(d: Path, succeed_from: int, crash_from: int = 10**6) -> str:
    """Attempt n (0-based) records itself; from `succeed_from` it succeeds, from `crash_from`
    it crashes at once; before, it holds a GPU actor and fails when it loses it."""
    return f"""
import os, sys, time, ray
d = {str(d)!r}; os.makedirs(d, exist_ok=True)
n = len([f for f in os.listdir(d) if f.startswith("attempt-")])
open(os.path.join(d, f"attempt-{{n}}"), "w").close()
if n >= {succeed_from}: print("done", flush=True); sys.exit(0)
if n >= {crash_from}: print("bad config", flush=True); sys.exit(3)
ray.init(address="auto", log_to_driver=False)
@ray.remote(num_gpus=1, num_cpus=0)  # the GPU raylet has no CPUs
class W:
    def ping(self): return 1
w = W.remote()
ray.get(w.ping.remote(), timeout=120)
open(os.path.join(d, f"running-{{n}}"), "w").close()
print("running", flush=True)
try:
    while True:
        ray.get(w.ping.remote(), timeout=60); time.sleep(0.2)
except Exception as e:
    print("lost my GPU worker:", type(e).__name__, flush=True); sys.exit(1)
"""


def record(root: Path, run: str) -> list[dict]:
    from jobs.head.run_store import RunStore

    return RunStore(root, run).events()


def finished(root: Path, run: str) -> dict | None:
    ends = [r for r in record(root, run) if r["event"] in ("finished", "gave_up", "stopped")]
    return ends[-1] if ends else None


def test_preemptions_are_told_from_crashes_by_node_events(head, gpu, tmp_path):
    """Three preemptions in a row with --max-restarts 0 end in success."""
    run, d, root = name("preempt"), tmp_path / "marks", runs_root(tmp_path)
    code, out, err = cli(
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
        gpu_script(d, succeed_from=3),
    )
    assert code == 0, err
    for i in range(3):
        # Death detection, the settle, a resubmit and a driver start: seconds on a quiet
        # machine, minutes with two suites on two cores. A generous wait costs nothing on success.
        wait_until(lambda i=i: (d / f"running-{i}").exists(), 300, f"attempt {i + 1} running")
        preempt(head, gpu)
    wait_until(lambda: finished(root, run) is not None, 600, "the run's end")
    recs = record(root, run)
    assert finished(root, run)["event"] == "finished", [r["message"] for r in recs]
    preempted = [r for r in recs if r["event"] == "preempted"]
    assert [r["attempt"] for r in preempted] == [1, 2, 3]
    assert all("died" in r["message"] for r in preempted)
    # Settle by probing: a preemption is no reason to back off; a wait, when there is one
    # (Ray had not marked the node dead yet), is said as `settling`, never silent.
    for r in recs:
        if r["event"] == "settling":
            assert "answer" in r["message"] or "first step" in r["message"], r["message"]
    code, out, _ = cli("status", run, "--runs-root", str(root), "--address", head.dashboard_url)
    assert code == 0 and "preempted" in out and f"{run}-a4 SUCCEEDED" in out


def test_a_crash_is_tried_twice_and_a_preemption_is_not_one_of_them(head, gpu, tmp_path):
    run, d, root = name("crash"), tmp_path / "marks", runs_root(tmp_path)
    code, _, err = cli(
        "run",
        "--address",
        head.dashboard_url,
        "--name",
        run,
        "--cluster-gpus",
        "2",
        "--max-restarts",
        "5",
        "--runs-root",
        str(root),
        "--",
        "python",
        "-c",
        gpu_script(d, succeed_from=99, crash_from=1),
    )
    assert code == 0, err
    wait_until(lambda: (d / "running-0").exists(), 120, "attempt 1 running")
    preempt(head, gpu)
    wait_until(lambda: finished(root, run) is not None, 360, "the run's end")
    end = finished(root, run)
    assert end["event"] == "gave_up" and end["reason"] == "crash", end
    ended = [r["status"] for r in record(root, run) if r["event"] == "attempt_ended"]
    assert ended == ["FAILED", "FAILED", "FAILED"]  # a1 preempted, a2 and a3 crashed
    assert not (d / "attempt-3").exists()


def test_a_silent_attempt_is_stopped_as_stalled_and_restarted(head, tmp_path):
    run, d, root = name("stall"), tmp_path / "marks", runs_root(tmp_path)
    script = (
        f"import os, sys, time; d = {str(d)!r}; os.makedirs(d, exist_ok=True)\n"
        "n = len(os.listdir(d)); open(os.path.join(d, str(n)), 'w').close()\n"
        "if n: print('done'); sys.exit(0)\n"
        "print('loading', flush=True); time.sleep(600)"
    )
    code, _, err = cli(
        "run",
        "--address",
        head.dashboard_url,
        "--name",
        run,
        "--max-restarts",
        "1",
        "--stall-timeout",
        "15",
        "--runs-root",
        str(root),
        "--",
        "python",
        "-c",
        script,
    )
    assert code == 0, err
    wait_until(lambda: finished(root, run) is not None, 300, "the run's end")
    recs = record(root, run)
    assert finished(root, run)["event"] == "finished", [r["message"] for r in recs]
    assert [r["status"] for r in recs if r["event"] == "attempt_ended"] == ["STALLED", "SUCCEEDED"]
    stalled = [r for r in recs if r["event"] == "stalled"]
    assert len(stalled) == 1 and stalled[0]["quiet_s"] >= 15
    _, out, _ = cli("status", run, "--runs-root", str(root))
    assert "stalled" in out


def _rearmer(address: str, root: Path, *flags: str):
    import subprocess
    import sys

    from tests.jobs.conftest import REPO, clean_env

    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobs.head.rearm",
            "--address",
            address,
            "--runs-root",
            str(root),
            "--interval",
            "1",
            *flags,
        ],
        cwd=REPO,
        env=clean_env(**FAST),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except Exception:
        proc.kill()
        proc.wait(timeout=10)


def _status(root: Path, run: str) -> dict:
    code, out, err = cli("status", run, "--runs-root", str(root), "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_killed_supervisor_reads_unsupervised_and_is_re_armed_and_stop_ends_it(head, tmp_path):
    run, root = name("oom"), runs_root(tmp_path)
    code, _, err = cli(
        "run",
        "--address",
        head.dashboard_url,
        "--name",
        run,
        "--max-restarts",
        "1",
        "--runs-root",
        str(root),
        "--",
        "python",
        "-c",
        "import time; print('training', flush=True); time.sleep(600)",
    )
    assert code == 0, err
    wait_until(lambda: any(r["event"] == "submitted" for r in record(root, run)), 60, "a1")
    # The supervisor's python (not the shell Ray wraps the entrypoint in).
    [sup] = [
        p
        for p in psutil.process_iter(["cmdline"])
        if {"jobs.head.supervisor", f"{run}-s1"} <= set(p.info["cmdline"] or [])
    ]
    sup.kill()  # as an out-of-memory kill would end it
    killed = time.monotonic()
    wait_until(lambda: _status(root, run)["status"] == "UNSUPERVISED", 30, "unsupervised")
    assert time.monotonic() - killed < 15
    _, human, _ = cli("status", run, "--runs-root", str(root))
    assert "unsupervised" in human
    rearmer = _rearmer(head.dashboard_url, root)
    try:
        wait_until(lambda: _status(root, run)["status"] == "RUNNING", 60, "re-armed")
        v = _status(root, run)
        assert v["supervisor"]["submission_id"] == f"{run}-s2"
        wait_until(
            lambda: any(r["event"] == "adopted" for r in record(root, run)), 60, "a1 adopted"
        )
        assert [a["submission_id"] for a in _status(root, run)["attempts"]] == [f"{run}-a1"]
        code, _, err = cli("stop", run, "--address", head.dashboard_url)
        assert code == 0, err
        wait_until(lambda: finished(root, run) is not None, 30, "stopped")
        assert finished(root, run)["event"] == "stopped"
        time.sleep(4)  # four sweeps: a stopped run is never re-armed
        assert _status(root, run)["status"] == "STOPPED"
        assert rearmer.poll() is None  # it keeps running
    finally:
        _stop(rearmer)
        _stop_everything(head)


def test_the_whole_cluster_lost_mid_run_goes_on_on_a_new_one_with_the_rearmer(tmp_path):
    run, root, d = name("headloss"), runs_root(tmp_path), tmp_path / "marks"
    script = (
        f"import os, sys, time; d = {str(d)!r}; os.makedirs(d, exist_ok=True)\n"
        "n = len(os.listdir(d)); open(os.path.join(d, str(n)), 'w').close()\n"
        "if n: print('resumed'); sys.exit(0)\n"
        "print('training', flush=True); time.sleep(600)"
    )
    first = localray.start(num_cpus=2)
    try:
        code, _, err = cli(
            "run",
            "--address",
            first.dashboard_url,
            "--name",
            run,
            "--max-restarts",
            "1",
            "--runs-root",
            str(root),
            "--",
            "python",
            "-c",
            script,
        )
        assert code == 0, err
        wait_until(lambda: (d / "0").exists(), 60, "a1 running")
        # The lease names the head its holder runs on: the new cluster's Ray cannot vouch for it.
        lost_head = JobsAPI(first.dashboard_url).session_name()
        assert lost_head and RunStore(root, run).lease().head == lost_head
    finally:
        # The head pod lost: every process of the cluster SIGKILLed at once (when a container's
        # PID 1 ends, the kernel SIGKILLs the rest of its PID namespace), then cleaned up.
        for p in localray._our_processes(first.process.pid, first.temp_dir):
            try:
                p.kill()
            except psutil.Error:
                pass
        first.stop()
    second = localray.start(num_cpus=2)
    # The grace a lease of another head gets (60 s, jobs/head/rearm.py OTHER_HEAD_GRACE_S) is
    # shortened: its own test is test_rearm.py's; this one is the whole life across two clusters.
    rearmer = _rearmer(second.dashboard_url, root, "--other-head-grace", "5")
    try:
        # Re-armed once the lost head's lease lapsed and the grace was over.
        wait_until(lambda: finished(root, run) is not None, 180, "the run's end")
        v = _status(root, run)
        assert v["status"] == "SUCCEEDED", [r["message"] for r in v["history"]]
        assert [(a["submission_id"], a["status"]) for a in v["attempts"]] == [
            (f"{run}-a1", "FAILED"),
            (f"{run}-a2", "SUCCEEDED"),
        ]
        sups = {r.get("supervisor") for r in v["history"] if r["event"] == "submitted"}
        assert sups == {f"{run}-s1", f"{run}-s2"}  # attempts from before and after the loss
        new_head = JobsAPI(second.dashboard_url).session_name()
        assert RunStore(root, run).lease().head == new_head != lost_head
    finally:
        _stop(rearmer)
        second.stop()


@pytest.mark.parametrize("reader", ["export", "eval"])
def test_an_export_holds_the_run_and_restarts_keep_exactly_keep_n_checkpoints(
    head, tmp_path, monkeypatch, reader
):
    """veRL layout: a half-written global_step_N is not progress; between attempts the
    supervisor prunes to keep-N, but not while an export or an eval of the run (both read a
    checkpoint) is running."""
    # The hand-off runs in this process and forwards these settings to the supervisor: every
    # failed attempt now settles before it is judged (its workers may have been on a lost node),
    # so settle briefly.
    for var, value in FAST.items():
        monkeypatch.setenv(var, value)
    from jobs.client.api import JobsAPI
    from jobs.client.dashboard import Dashboard
    from jobs.runs import handoff, plan

    run, root, ckpt = name("hyg"), runs_root(tmp_path), tmp_path / "ckpt"
    for n in (2, 4, 6, 8):
        (ckpt / f"global_step_{n}" / "actor").mkdir(parents=True)
        # FSDP's per-rank weights: a veRL step without them is not complete.
        (ckpt / f"global_step_{n}" / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"w")
    (ckpt / "latest_checkpointed_iteration.txt").write_text("6")  # global_step_8: half-written
    release, go = tmp_path / "export-done", tmp_path / "go"
    # The project's client resends a submit whose link to the job agent dropped (the images'
    # Ray 2.46/2.48 answer 500 ServerDisconnectedError then); Ray's own client does not.
    client = JobsAPI(head.dashboard_url)
    # Attempt 1 fails once `go` exists (after the export started); attempt 2 succeeds.
    script = (
        f"import os, sys, time; m = {str(tmp_path / 'marks')!r}; os.makedirs(m, exist_ok=True)\n"
        "n = len(os.listdir(m)); open(os.path.join(m, str(n)), 'w').close()\n"
        f"while not n and not os.path.exists({str(go)!r}): time.sleep(0.2)\n"
        "sys.exit(0 if n else 1)"
    )
    sub = plan.for_command(["python", "-c", script], run, None, None, "test")
    try:
        sid = handoff.hand_off(
            Dashboard(head.dashboard_url),
            sub,
            max_restarts=1,
            gpus=0,
            checkpoint_dir=str(ckpt),
            hint_where="",
            options=handoff.Options(runs_root=str(root), keep=2),
        ).supervisor
        assert sid == f"{run}-s1"
        client.submit_job(
            entrypoint=f'python -c "import os, time\nwhile not os.path.exists('
            f'{str(release)!r}): time.sleep(0.2)"',
            submission_id=f"{run}-{reader}-1",
            metadata={"run": run, "kind": reader},
        )
        go.touch()
        wait_until(lambda: any(r["event"] == "held" for r in record(root, run)), 60, "held")
        time.sleep(2)  # four poll periods: still held, nothing pruned, no second attempt
        assert sorted(p.name for p in ckpt.iterdir() if p.name.startswith("global")) == [
            "global_step_2",
            "global_step_4",
            "global_step_6",
            "global_step_8",
        ]
        assert not any(r["event"] == "submitted" and r["attempt"] == 2 for r in record(root, run))
    finally:
        release.touch()
    wait_until(lambda: finished(root, run) is not None, 60, "the run's end")
    recs = record(root, run)
    assert finished(root, run)["event"] == "finished", [r["message"] for r in recs]
    [pruned] = [r for r in recs if r["event"] == "pruned"]
    assert pruned["removed"] == ["global_step_2", "global_step_8"]
    assert sorted(p.name for p in ckpt.iterdir() if p.name.startswith("global")) == [
        "global_step_4",
        "global_step_6",
    ]
    ended = [r for r in recs if r["event"] == "attempt_ended"]
    assert ended[0]["new_checkpoint"] is None  # nothing to compare with: not a crash


def test_item0_a_gpu_node_lost_under_a_run_that_declares_no_gpus_is_a_preemption(
    head, gpu, tmp_path
):
    """On a real Ray: `run` without --gpus (the driver needs none, its actor
    sits on the GPU raylet, Ray's usual shape) was judged a crash 8 s after that raylet was
    killed ("0 GPU(s) needed", "gave up: restarts exhausted"). The supervisor now asks Ray which
    nodes hosted the attempt's actors and waits for the death to be recorded."""
    run, d, root = name("nogpus"), tmp_path / "marks", runs_root(tmp_path)
    code, out, err = cli(
        "run",
        "--address",
        head.dashboard_url,
        "--name",
        run,
        "--max-restarts",
        "0",
        "--max-preemptions",
        "3",
        "--runs-root",
        str(root),
        "--",
        "python",
        "-c",
        gpu_script(d, succeed_from=1),
    )
    assert code == 0, err
    wait_until(lambda: (d / "running-0").exists(), 300, "attempt 1 running")
    preempt(head, gpu)
    wait_until(lambda: finished(root, run) is not None, 600, "the run's end")
    recs = record(root, run)
    assert finished(root, run)["event"] == "finished", [r["message"] for r in recs]
    [preempted] = [r for r in recs if r["event"] == "preempted"]
    assert preempted["attempt"] == 1 and "died" in preempted["message"], preempted
    assert not [r for r in recs if r["event"] == "crashed"], [r["message"] for r in recs]


def stepping_script(d: Path, succeed_from: int, steps: int = 12, save_every: int = 3) -> str:
    """A trainer in veRL's console shape (`step:N - key:value`, verl/utils/tracking.py at 0.6.0):
    resumes after its last save (a file in `d`), saves every `save_every` steps; before attempt
    `succeed_from` it holds a GPU actor and dies with it; from then it runs to `steps`."""
    return f"""
import os, sys, time, ray
d = {str(d)!r}; os.makedirs(d, exist_ok=True)
n = len([f for f in os.listdir(d) if f.startswith("attempt-")])
open(os.path.join(d, f"attempt-{{n}}"), "w").close()
saved = int(open(os.path.join(d, "saved")).read()) if os.path.exists(os.path.join(d, "saved")) else 0
w = None
if n < {succeed_from}:
    ray.init(address="auto", log_to_driver=False)
    @ray.remote(num_gpus=1, num_cpus=0)
    class W:
        def ping(self): return 1
    w = W.remote()
    ray.get(w.ping.remote(), timeout=120)
time.sleep(1.0)  # start-up
for k in range(saved + 1, {steps} + 1):
    try:
        if w is not None:
            ray.get(w.ping.remote(), timeout=60)
    except Exception as e:
        print("lost my GPU worker:", type(e).__name__, flush=True); sys.exit(1)
    time.sleep(0.5)
    line = f"step:{{k}} - critic/score/mean:{{k / {steps}:.3f}} - timing_s/step:0.5"
    if k % {save_every} == 0:
        time.sleep(0.2)
        open(os.path.join(d, "saved"), "w").write(str(k))
        line += " - timing_s/save_checkpoint:0.2"
    print(line, flush=True)
    if w is not None and k >= saved + 4:
        # Steps since the save, then the preemption (the test waits for this mark).
        open(os.path.join(d, f"running-{{n}}"), "w").close()
        try:
            while True:
                ray.get(w.ping.remote(), timeout=60); time.sleep(0.2)
        except Exception as e:
            print("lost my GPU worker:", type(e).__name__, flush=True); sys.exit(1)
print("done", flush=True)
"""


def test_a_run_preempted_twice_shows_both_interruptions_in_its_goodput(head, gpu, tmp_path):
    """`status` of a run preempted twice (the example in docs/jobs.md, "Goodput"):
    two preemptions on the record, the steps redone after each, and what each end cost."""
    run, d, root = name("twice"), tmp_path / "marks", runs_root(tmp_path)
    code, out, err = cli(
        "run",
        "--address",
        head.dashboard_url,
        "--name",
        run,
        "--cluster-gpus",
        "2",
        "--max-preemptions",
        "3",
        "--runs-root",
        str(root),
        "--",
        "python",
        "-c",
        stepping_script(d, succeed_from=2),
    )
    assert code == 0, err
    for i in range(2):
        wait_until(lambda i=i: (d / f"running-{i}").exists(), 300, f"attempt {i + 1} running")
        preempt(head, gpu)
    wait_until(lambda: finished(root, run) is not None, 600, "the run's end")
    assert finished(root, run)["event"] == "finished"
    # From Ray (the supervisors' logs and the attempts').
    code, out, err = cli("status", run, "--address", head.dashboard_url)
    assert code == 0, err
    print(out)
    code, js, err = cli("status", run, "--address", head.dashboard_url, "--json")
    view = json.loads(js)
    assert [r["attempt"] for r in view["history"] if r["event"] == "preempted"] == [1, 2]
    spent = view["goodput"]
    assert [i["after"] for i in spent["interruptions"]] == [f"{run}-a1", f"{run}-a2"]
    assert all(i["redone"] > 0 for i in spent["interruptions"]), spent
    assert spent["seconds"]["productive"] == pytest.approx(12 * 0.5, abs=0.2)
    assert f"the end of {run}-a1:" in out and f"the end of {run}-a2:" in out, out
    assert "productive of" in out and "progress: step 12" in out, out
    # From the record on the runs root alone (the head may be gone): the step lines the
    # supervisor kept at each attempt's end give the same accounting, to the records' precision.
    code, js, err = cli("status", run, "--runs-root", str(root), "--json")
    assert code == 0, err
    kept = json.loads(js)["goodput"]
    assert kept["seconds"]["productive"] == pytest.approx(spent["seconds"]["productive"], abs=0.2)
    assert kept["seconds"]["redone"] == pytest.approx(spent["seconds"]["redone"], abs=0.2)
    assert [i["after"] for i in kept["interruptions"]] == [f"{run}-a1", f"{run}-a2"]
    assert sum(kept["seconds"].values()) == pytest.approx(sum(spent["seconds"].values()), abs=2)
    code, out, err = cli("status", run, "--runs-root", str(root))
    assert "productive of" in out and "progress: step 12" in out, out
    # `list` of the cluster and of the runs root say where the run got to.
    for where in (["--address", head.dashboard_url], ["--runs-root", str(root)]):
        code, out, err = cli("list", *where)
        assert code == 0, err
        lines = out.splitlines()
        at = next(i for i, t in enumerate(lines) if t.startswith(run))
        block = " ".join(lines[at : at + 2])  # the cluster's list: details on an indented line
        assert "SUCCEEDED" in block and "step 12" in block, out


def gpu_checking_script(d: Path) -> str:
    """As `gpu_script` with succeed_from=1, but each attempt first looks for a GPU in the cluster
    and fails at once without one (veRL checks free GPUs before it places anything,
    ray_trainer.py L103-119 at v0.6.0)."""
    init = 'ray.init(address="auto", log_to_driver=False)\n'
    return (
        gpu_script(d, succeed_from=1)
        .replace(init, "")
        .replace(
            "if n >= 1:",
            'ray.init(address="auto", log_to_driver=False)\n'
            'if ray.cluster_resources().get("GPU", 0) < 1:\n'
            '    print("RuntimeError: no GPU in the cluster", flush=True); sys.exit(1)\n'
            "if n >= 1:",
        )
    )


def test_a_run_without_gpus_waits_out_a_stockout_after_a_preemption(head, gpu, tmp_path):
    """On a real Ray: `run` without --gpus whose actor sits on the GPU
    raylet; the raylet is killed and comes back only 25 s later (a stockout, 50 x the poll and
    8 x the settle time here). The next attempts were submitted at once, found no GPU and
    the crash rule ended the run. The supervisor now waits for the GPUs the attempt's actor
    ran on, and submits once they are back."""
    run, d, root = name("nogpus-stockout"), tmp_path / "marks", runs_root(tmp_path)
    script = gpu_checking_script(d)
    assert "no GPU in the cluster" in script
    code, out, err = cli(
        "run", "--address", head.dashboard_url, "--name", run,
        "--max-restarts", "3", "--max-preemptions", "3", "--runs-root", str(root),
        "--", "python", "-c", script,
    )  # fmt: skip
    assert code == 0, err
    wait_until(lambda: (d / "running-0").exists(), 300, "attempt 1 running")
    preempt(head, gpu, replace=False)
    wait_until(
        lambda: any(r["event"] == "waiting" for r in record(root, run)), 120, "a capacity wait"
    )
    time.sleep(25)
    assert finished(root, run) is None, [r["message"] for r in record(root, run)]
    back = GpuNode(head, gpus=2)
    gpu.append(back)
    back.join(timeout=180)
    wait_until(lambda: finished(root, run) is not None, 300, "the run's end")
    recs = record(root, run)
    assert finished(root, run)["event"] == "finished", [r["message"] for r in recs]
    assert len([r for r in recs if r["event"] == "submitted"]) == 2, [r["message"] for r in recs]
    [wait] = [r for r in recs if r["event"] == "waiting"]
    assert wait["gpus_needed"] == 2, wait
