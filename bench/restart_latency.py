"""Benchmark: restart latency of supervised runs (default: after a preemption, new vs old supervisor).

`--scenario preemption` (the default): node lost -> next attempt RUNNING. One private Ray head
on loopback plus a GPU raylet (tests/jobs/gpu_node.py); attempt 1 holds a GPU actor on it; the
benchmark SIGKILLs the raylet's whole tree (a reclaimed spot VM) and starts a replacement at
once; attempt 1 fails when Ray gives its actor up; the time runs from the kill to the moment
attempt 2 is first seen RUNNING (polled every 50 ms). Measured for
  (a) the supervisor of this tree (preemption told from node events, settle after every
      failure, JOBS_SUPERVISOR_* production defaults unless set in the environment), and
  (b) the present one: the same command through a `git archive` of BASELINE_COMMIT (7298279:
      main before 626a81e told preemption from node events), on the same cluster,
alternating which goes first, same command: `rl-jobs run --gpus 2 --max-restarts 1`.
Prints a table and the ratio (median new / median old).

`--scenario failure` (the earlier benchmark): from an attempt's FAILED to the next attempt's
RUNNING, supervisor vs the CLI loop:

Starts its own private Ray head on loopback (tests/localray.py) and, in one run, N repetitions of
  (a) the supervisor: `rl-jobs run --max-restarts 1 -- CMD` (the run handed to
      jobs/head/supervisor.py on the head, production poll period), and
  (b) the baseline, the restart loop that ran inside the CLI process before the supervisor
      (bench/cli_restart_loop.py, polling every 0.5 s as the CLI did), the process kept alive,
alternating which goes first. CMD fails on its first attempt and runs (sleeps) on the next;
no GPUs are needed, so capacity is present and no wait is involved. The time is measured from
attempt 1's `end_time` as Ray recorded it (the moment it was marked FAILED) to the moment this
script first sees attempt 2 RUNNING (polled every 20 ms). Prints a table and the ratio
(median supervisor / median CLI loop), then stops every job and the head.
Run: .venv/bin/python bench/restart_latency.py [--reps 5] [--scenario preemption|failure]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ray import __version__ as ray_version  # noqa: E402
from ray.job_submission import JobStatus, JobSubmissionClient  # noqa: E402

from bench import git_tree  # noqa: E402
from tests import localray  # noqa: E402

TIMEOUT_S = 90.0
BASELINE_COMMIT = "7298279"
PREEMPT_TIMEOUT_S = 300.0


def script(marker: Path) -> str:
    return (
        f"import os, sys, time; p = {str(marker)!r}\n"
        "if os.path.exists(p): time.sleep(120); sys.exit(0)\n"
        "open(p, 'w').close(); sys.exit(1)"
    )


def status(client: JobSubmissionClient, job_id: str) -> JobStatus | None:
    try:
        return client.get_job_status(job_id)
    except RuntimeError:  # not submitted yet (404)
        return None


def restart_latency(client: JobSubmissionClient, run: str) -> float:
    """Seconds from a1 FAILED (Ray's end_time) to a2 first seen RUNNING."""
    deadline = time.monotonic() + TIMEOUT_S
    while status(client, f"{run}-a1") != JobStatus.FAILED:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run}-a1 did not fail within {TIMEOUT_S:.0f} s")
        time.sleep(0.02)
    while (s := status(client, f"{run}-a2")) != JobStatus.RUNNING:
        if s is not None and s.is_terminal():
            raise RuntimeError(f"{run}-a2 ended {s.value} before it was RUNNING")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run}-a2 not RUNNING within {TIMEOUT_S:.0f} s")
        time.sleep(0.02)
    seen = time.time()
    end_ms = client.get_job_info(f"{run}-a1").end_time
    return seen - end_ms / 1000.0


def stop_run(client: JobSubmissionClient, run: str) -> None:
    """Supervisor first (nothing is resubmitted after it), then the attempts; wait for all."""
    ids = sorted(
        (j.submission_id for j in client.list_jobs() if (j.metadata or {}).get("run") == run),
        key=lambda i: "-s" not in i,
    )
    for job_id in ids:
        if not client.get_job_status(job_id).is_terminal():
            client.stop_job(job_id)
            deadline = time.monotonic() + 60
            while not client.get_job_status(job_id).is_terminal():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{job_id} did not stop")
                time.sleep(0.1)


def gpu_script(d: Path) -> str:
    """Attempt 1 holds a GPU actor and fails when it loses it; attempt 2 runs (sleeps)."""
    return f"""
import os, sys, time, ray
d = {str(d)!r}; os.makedirs(d, exist_ok=True)
n = len(os.listdir(d)); open(os.path.join(d, f"attempt-{{n}}"), "w").close()
if n: time.sleep(300); sys.exit(0)
ray.init(address="auto", log_to_driver=False)
@ray.remote(num_gpus=1, num_cpus=0)
class W:
    def ping(self): return 1
w = W.remote(); ray.get(w.ping.remote(), timeout=120)
open(os.path.join(d, "running"), "w").close()
try:
    while True: ray.get(w.ping.remote(), timeout=60); time.sleep(0.2)
except Exception: sys.exit(1)
"""


def _alive_gpu_node_ids(dashboard_url: str) -> set[str]:
    from jobs.head import node_events

    return set(node_events.alive_gpu_nodes(node_events.fetch(dashboard_url))[0])


def preemption_latency(
    client: JobSubmissionClient, run: str, marks: Path, head: Any, nodes: list[Any]
) -> tuple[float, float | None]:
    """Seconds from the GPU raylet's SIGKILL to attempt 2 first seen RUNNING, and to the moment
    Ray's node table first shows that raylet dead (None if a2 ran before that)."""
    from tests.jobs.gpu_node import GpuNode

    deadline = time.monotonic() + PREEMPT_TIMEOUT_S
    while not (marks / "running").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run}-a1 never held its GPU actor")
        time.sleep(0.05)
    lost = _alive_gpu_node_ids(head.dashboard_url)
    killed = time.time()
    nodes[-1].kill()
    nodes.append(GpuNode(head, gpus=2))
    nodes[-1].start()
    dead_after: float | None = None
    polled = 0.0
    while (s := status(client, f"{run}-a2")) != JobStatus.RUNNING:
        if s is not None and s.is_terminal():
            raise RuntimeError(f"{run}-a2 ended {s.value} before it was RUNNING")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run}-a2 not RUNNING within {PREEMPT_TIMEOUT_S:.0f} s")
        if dead_after is None and time.monotonic() - polled >= 0.25:
            polled = time.monotonic()
            if not lost & _alive_gpu_node_ids(head.dashboard_url):
                dead_after = time.time() - killed
        time.sleep(0.05)
    return time.time() - killed, dead_after


def one_submit(client: JobSubmissionClient) -> float:
    """Seconds from one `submit_job` to its job first seen RUNNING (then stopped)."""
    started = time.time()
    job_id = client.submit_job(entrypoint="python -c 'import time; time.sleep(60)'")
    deadline = time.monotonic() + TIMEOUT_S
    while status(client, job_id) != JobStatus.RUNNING:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{job_id} not RUNNING within {TIMEOUT_S:.0f} s")
        time.sleep(0.05)
    took = time.time() - started
    client.stop_job(job_id)
    return took


def baseline_tree(tmp: Path) -> Path:
    """A checkout of the present supervisor (main at 7298279, before 626a81e told
    preemption from node events), to run its CLI from."""
    return git_tree.unpack(BASELINE_COMMIT, tmp / "baseline")


def stop_everything(
    procs: list[subprocess.Popen[bytes]], nodes: list[Any], head: Any, tmp: Path
) -> None:
    """The CLIs left running, the GPU raylets, the head and the scratch folder."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for node in nodes:
        node.close()
    head.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def main_preemption_vs_ray(reps: int, base_env: dict[str, str]) -> int:
    """This tree's supervisor against Ray's own floor, in the same run: the time Ray takes to
    mark the lost raylet dead (measured during the same repetition) plus one submit to
    RUNNING (measured right after it)."""
    from tests.jobs.gpu_node import GpuNode, wait_gpus

    head = localray.start()
    client = JobSubmissionClient(head.dashboard_url)
    tmp = Path(tempfile.mkdtemp(prefix="preempt-bench-"))
    nodes = [GpuNode(head, gpus=2)]
    nodes[0].start()
    latency: list[float] = []
    floor: list[float] = []
    deaths: list[float] = []
    submits: list[float] = []
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(reps):
            wait_gpus(head.dashboard_url, 2, timeout=120)
            run = f"pr-{uuid.uuid4().hex[:6]}"
            marks = tmp / run
            proc = subprocess.Popen(
                [sys.executable, "-m", "jobs", "run", "--address", head.dashboard_url]
                # --cluster-gpus: wait for the node's GPUs without reserving them for the
                # driver (--gpus now does), so that attempt 1's GPU actor can take one.
                + ["--name", run, "--cluster-gpus", "2", "--max-restarts", "1", "--"]
                + ["python", "-c", gpu_script(marks)],
                cwd=ROOT,
                env=base_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(proc)
            took, dead_after = preemption_latency(client, run, marks, head, nodes)
            stop_run(client, run)
            proc.wait(timeout=60)
            submit = one_submit(client)
            if dead_after is None:
                raise RuntimeError(f"{run}-a2 ran before Ray marked the lost raylet dead")
            latency.append(took)
            deaths.append(dead_after)
            submits.append(submit)
            floor.append(dead_after + submit)
    finally:
        stop_everything(procs, nodes, head, tmp)
    settle = base_env.get("JOBS_SUPERVISOR_SETTLE_S", "60 (default)")
    print(
        f"repetitions: {reps} (seconds; median / min / max); {os.cpu_count()} CPUs, "
        f"Ray {ray_version}; JOBS_SUPERVISOR_SETTLE_S={settle}"
    )
    print(f"| {'GPU raylet SIGKILLed ->':<44} | median |    min |    max |")
    print(f"|{'-' * 46}|--------|--------|--------|")
    print(row("a2 RUNNING (supervisor, settle by probing)", latency))
    print(row("Ray marks the raylet dead", deaths))
    print(row("one submit -> RUNNING", submits))
    print(row("Ray's floor: death + one submit", floor))
    ratio = statistics.median(latency) / statistics.median(floor)
    print(f"restart latency after a preemption (median supervisor / median floor): {ratio:.2f}")
    return 0


def main_preemption(reps: int, base_env: dict[str, str]) -> int:
    from tests.jobs.gpu_node import GpuNode, wait_gpus

    head = localray.start()
    client = JobSubmissionClient(head.dashboard_url)
    tmp = Path(tempfile.mkdtemp(prefix="preempt-bench-"))
    nodes = [GpuNode(head, gpus=2)]
    nodes[0].start()
    results: dict[str, list[float]] = {"new": [], "old": []}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        trees = {"new": ROOT, "old": baseline_tree(tmp)}
        for i in range(1, reps + 1):
            for kind in ["new", "old"] if i % 2 else ["old", "new"]:
                wait_gpus(head.dashboard_url, 2, timeout=120)
                run = f"pb-{kind}-{uuid.uuid4().hex[:6]}"
                marks = tmp / run
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "jobs",
                        "run",
                        "--address",
                        head.dashboard_url,
                        "--name",
                        run,
                        "--gpus",
                        "2",
                        "--max-restarts",
                        "1",
                        "--",
                        "python",
                        "-c",
                        gpu_script(marks),
                    ],
                    cwd=trees[kind],
                    env=base_env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                procs.append(proc)
                results[kind].append(preemption_latency(client, run, marks, head, nodes)[0])
                stop_run(client, run)
                proc.wait(timeout=60)
    finally:
        stop_everything(procs, nodes, head, tmp)
    settle = base_env.get("JOBS_SUPERVISOR_SETTLE_S", "60 (default)")
    print(
        f"repetitions: {reps}, alternating order (seconds; median / min / max); "
        f"{os.cpu_count()} CPUs, Ray {ray_version}; JOBS_SUPERVISOR_SETTLE_S={settle}"
    )
    print(f"| {'GPU raylet SIGKILLed -> a2 RUNNING':<44} | median |    min |    max |")
    print(f"|{'-' * 46}|--------|--------|--------|")
    print(row("new supervisor (node events + settle)", results["new"]))
    print(row(f"present supervisor (main {BASELINE_COMMIT})", results["old"]))
    ratio = statistics.median(results["new"]) / statistics.median(results["old"])
    print(f"restart latency after a preemption (median new / median present): {ratio:.2f}")
    return 0


def row(label: str, xs: list[float]) -> str:
    return f"| {label:<44} | {statistics.median(xs):6.2f} | {min(xs):6.2f} | {max(xs):6.2f} |"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--scenario", choices=("preemption", "failure"), default="preemption")
    parser.add_argument(
        "--against",
        choices=("ray", "old"),
        default="ray",
        help="preemption: Ray's own floor (death detection + one submit), or the old supervisor",
    )
    args = parser.parse_args()
    reps = args.reps
    base_env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")
        and (args.scenario == "preemption" or not k.startswith("JOBS_SUPERVISOR_"))
    }
    if args.scenario == "preemption":
        if args.against == "ray":
            return main_preemption_vs_ray(reps, base_env)
        return main_preemption(reps, base_env)
    head = localray.start()
    client = JobSubmissionClient(head.dashboard_url)
    tmp = Path(tempfile.mkdtemp(prefix="restart-bench-"))
    results: dict[str, list[float]] = {"supervisor": [], "cli": []}
    procs: list[subprocess.Popen[bytes]] = []
    try:

        def measure(kind: str) -> None:
            run = f"rb-{kind}-{uuid.uuid4().hex[:6]}"
            env = dict(base_env)
            program = (
                ["-m", "jobs", "run"]
                if kind == "supervisor"
                else [str(ROOT / "bench" / "cli_restart_loop.py")]
            )
            args = [
                sys.executable,
                *program,
                "--address",
                head.dashboard_url,
                "--name",
                run,
                "--max-restarts",
                "1",
                "--",
                "python",
                "-c",
                script(tmp / run),
            ]
            proc = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            procs.append(proc)
            results[kind].append(restart_latency(client, run))
            stop_run(client, run)
            proc.wait(timeout=60)  # the CLI loop ends once a2 is STOPPED; the other returned

        for i in range(1, reps + 1):
            order = ["supervisor", "cli"] if i % 2 else ["cli", "supervisor"]
            for kind in order:
                measure(kind)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        head.stop()
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()

    print(
        f"repetitions: {reps}, alternating order (seconds; median / min / max); "
        f"{os.cpu_count()} CPUs, Ray {ray_version}"
    )
    print(f"| {'a1 FAILED -> a2 RUNNING':<44} | median |    min |    max |")
    print(f"|{'-' * 46}|--------|--------|--------|")
    print(row("supervisor on the head (poll 1 s)", results["supervisor"]))
    print(row("CLI loop (bench/cli_restart_loop.py, poll 0.5 s)", results["cli"]))
    ratio = statistics.median(results["supervisor"]) / statistics.median(results["cli"])
    print(f"restart latency ratio (median supervisor / median CLI loop): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
