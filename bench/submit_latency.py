"""Benchmark: `rl-jobs` commands against Ray's own `ray job` commands on one head: submit, supervised hand-off, status, logs, list.

Starts its own private Ray head on loopback (tests/localray.py), runs N repetitions of
  (a) `rl-jobs run --address URL -- python -c 'sleep'` then polls until RUNNING, and
  (b) the same job via `ray job submit --no-wait` (wall time of each CLI process),
alternating which goes first; then, on the jobs those left, N repetitions each of `status`,
`logs` and `list` against `ray job status`, `ray job logs` and `ray job list`, and of a
supervised hand-off against `ray job submit --no-wait`: with `--wait` (returns once its
supervisor has the run), by default (returns at submit once a supervisor of the same code took
a run on this head, as the `--wait` ones have) and with `--no-wait` (returns at submit). Prints a table and each ratio (ours / Ray's), then stops the
head.
Run: .venv/bin/python bench/submit_latency.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ray import __version__ as ray_version  # noqa: E402
from ray.job_submission import JobStatus, JobSubmissionClient  # noqa: E402

from tests import localray  # noqa: E402

ENTRY = ["python", "-c", "import time; time.sleep(30)"]


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


# A 2-core machine starts a job in ~2-4 s (reference §4.3); a minute means something broke.
RUNNING_TIMEOUT_S = 60.0


def until_running(
    client: JobSubmissionClient, job_id: str, since: float, timeout_s: float = RUNNING_TIMEOUT_S
) -> float:
    """Seconds from `since` until the job is RUNNING; fails on a terminal state or timeout,
    so a job that died at once cannot hang the benchmark or count as a time."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = client.get_job_status(job_id)
        if status == JobStatus.RUNNING:
            return time.perf_counter() - since
        if status.is_terminal():
            raise RuntimeError(f"{job_id} ended {status.value} before it was RUNNING")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{job_id} not RUNNING after {timeout_s:.0f} s ({status.value})")
        time.sleep(0.05)


def until_terminal(client: JobSubmissionClient, job_id: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not client.get_job_status(job_id).is_terminal():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{job_id} did not stop within {timeout_s:.0f} s")
        time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    env = {
        k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")
    }
    t0 = time.perf_counter()
    head = localray.start()
    print(
        f"ray head up in {time.perf_counter() - t0:.1f} s at {head.dashboard_url}", file=sys.stderr
    )
    client = JobSubmissionClient(head.dashboard_url)
    ours_cli, ours_running, ray_cli, ray_running = [], [], [], []
    try:

        def ours(run: str) -> str:
            start = time.perf_counter()
            ours_cli.append(
                timed(
                    [
                        sys.executable,
                        "-m",
                        "jobs",
                        "run",
                        "--address",
                        head.dashboard_url,
                        "--name",
                        run,
                        "--",
                        *ENTRY,
                    ],
                    env,
                )
            )
            ours_running.append(until_running(client, f"{run}-a1", start))
            client.stop_job(f"{run}-a1")
            return f"{run}-a1"

        def rays(sid: str) -> str:
            start = time.perf_counter()
            ray_cli.append(
                timed(
                    [
                        str(localray.venv_bin() / "ray"),
                        "job",
                        "submit",
                        "--address",
                        head.dashboard_url,
                        "--submission-id",
                        sid,
                        "--no-wait",
                        "--",
                        *ENTRY,
                    ],
                    env,
                )
            )
            ray_running.append(until_running(client, sid, start))
            client.stop_job(sid)
            return sid

        for i in range(1, reps + 1):
            pair = [
                (ours, f"bench-{uuid.uuid4().hex[:6]}"),
                (rays, f"raybench-{uuid.uuid4().hex[:6]}"),
            ]
            # Alternate who goes first (ours on odd repetitions, Ray's on even ones): the second
            # submission of a pair meets a head still busy with the first, and that must not
            # always be the same tool.
            for measure, ident in pair if i % 2 else pair[::-1]:
                until_terminal(client, measure(ident))
        side_by_side = _commands_side_by_side(head.dashboard_url, client, env, reps)
    finally:
        head.stop()

    def row(label: str, xs: list[float]) -> str:
        return f"| {label:<40} | {statistics.median(xs):6.2f} | {min(xs):6.2f} | {max(xs):6.2f} |"

    print(
        f"repetitions: {reps}, alternating order (seconds; median / min / max); "
        f"{os.cpu_count()} CPUs, Ray {ray_version}"
    )
    print(f"| {'measure':<40} | median |    min |    max |")
    print(f"|{'-' * 42}|--------|--------|--------|")
    print(row("rl-jobs run: CLI wall time", ours_cli))
    print(row("ray job submit --no-wait: CLI wall time", ray_cli))
    print(row("rl-jobs run: submit -> RUNNING", ours_running))
    print(row("ray job submit: submit -> RUNNING", ray_running))
    ratio = statistics.median(ours_cli) / statistics.median(ray_cli)
    print(f"CLI overhead ratio (median jobs / median ray job submit): {ratio:.2f}")
    for name, (ours_s, rays_s) in side_by_side.items():
        print(row(f"rl-jobs {name}: CLI wall time", ours_s))
        print(row(f"ray job {RAY_EQUIVALENT[name]}: CLI wall time", rays_s))
    for name, (ours_s, rays_s) in side_by_side.items():
        print(
            f"ratio {name} / ray job {RAY_EQUIVALENT[name]}: "
            f"{statistics.median(ours_s) / statistics.median(rays_s):.2f}"
        )
    return 0


# Ray's command each of ours is timed against.
RAY_EQUIVALENT = {
    "stop": "stop",
    "status": "status",
    "logs": "logs",
    "list": "list",
    "run --max-restarts 1 --wait": "submit --no-wait",
    "run --max-restarts 1": "submit --no-wait",
    "run --max-restarts 1 --no-wait": "submit --no-wait",
}


def _until_armed_or_ended(client: JobSubmissionClient, sid: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.get_job_status(sid).is_terminal() or "JOBS-SUPERVISOR" in client.get_job_logs(
            sid
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{sid} neither took its run nor ended within {timeout_s:.0f} s")


def _stops_side_by_side(
    client: JobSubmissionClient,
    env: dict[str, str],
    url: str,
    jobs_cli: list[str],
    ray_cli: list[str],
    reps: int,
) -> tuple[list[float], list[float]]:
    """`stop JOB` of a RUNNING job, ours and `ray job stop` (both return once it stopped)."""
    ours_s: list[float] = []
    rays_s: list[float] = []
    for i in range(reps):
        mine, theirs = f"stop-{uuid.uuid4().hex[:6]}", f"raystop-{uuid.uuid4().hex[:6]}"
        for sid in (mine, theirs):
            client.submit_job(entrypoint=shlex.join(ENTRY), submission_id=sid)
        for sid in (mine, theirs):
            until_running(client, sid, time.perf_counter())
        pair = [
            (ours_s, [*jobs_cli, "stop", mine, "--address", url]),
            (rays_s, [*ray_cli, "stop", theirs, "--address", url]),
        ]
        for into, args in pair if i % 2 else pair[::-1]:
            into.append(timed(args, env))
        for sid in (mine, theirs):
            until_terminal(client, sid)
    return ours_s, rays_s


def _commands_side_by_side(
    url: str, client: JobSubmissionClient, env: dict[str, str], reps: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Each command's wall time, ours and Ray's, alternating which goes first."""
    done = [j.submission_id for j in client.list_jobs() if j.submission_id]
    job = sorted(done)[0]
    jobs_cli, ray_cli = [sys.executable, "-m", "jobs"], [str(localray.venv_bin() / "ray"), "job"]
    out: dict[str, tuple[list[float], list[float]]] = {}
    for name in ("status", "logs", "list"):
        ident = [] if name == "list" else [job]
        ours_s, rays_s = [], []
        for i in range(reps):
            pair = [
                (ours_s, [*jobs_cli, name, *ident, "--address", url]),
                (rays_s, [*ray_cli, name, *ident, "--address", url]),
            ]
            for into, args in pair if i % 2 else pair[::-1]:
                into.append(timed(args, env))
        out[name] = (ours_s, rays_s)
    out["stop"] = _stops_side_by_side(client, env, url, jobs_cli, ray_cli, reps)
    # The supervised hand-off: waiting for the supervisor to take the run (--wait; what the
    # default does on a cluster where no supervisor of this code has taken a run yet), the
    # default once one has (the --wait ones before it have), and returning at submit
    # (--no-wait, what `ray job submit --no-wait` does).
    for label, extra in (
        ("run --max-restarts 1 --wait", ["--wait"]),
        ("run --max-restarts 1", []),
        ("run --max-restarts 1 --no-wait", ["--no-wait"]),
    ):
        ours_s, rays_s = [], []
        for i in range(reps):
            run, sid = f"sup-{uuid.uuid4().hex[:6]}", f"raysup-{uuid.uuid4().hex[:6]}"
            supervised = [*jobs_cli, "run", "--address", url, "--name", run, "--max-restarts", "1"]
            pair = [
                (ours_s, [*supervised, *extra, "--", *ENTRY]),
                (rays_s, [*ray_cli, "submit", "--address", url, "--submission-id", sid,
                          "--no-wait", "--", *ENTRY]),
            ]  # fmt: skip
            for into, args in pair if i % 2 else pair[::-1]:
                into.append(timed(args, env))
            # The next pair must not meet this one's supervisor still starting.
            _until_armed_or_ended(client, f"{run}-s1")
            subprocess.run([*jobs_cli, "stop", run, "--address", url], env=env, capture_output=True)
            client.stop_job(sid)
        out[label] = (ours_s, rays_s)
    return out


if __name__ == "__main__":
    sys.exit(main())
