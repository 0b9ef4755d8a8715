"""Benchmark: from an attempt's FAILED to the next attempt's RUNNING, supervisor vs the CLI loop.

Starts its own private Ray head on loopback (tests/localray.py) and, in one run, N repetitions of
  (a) the supervisor: `python -m jobs run --max-restarts 1 -- CMD` (the run handed to
      jobs/head/supervisor.py on the head, production poll period), and
  (b) the baseline, the restart loop that ran inside the CLI process before the supervisor
      (bench/cli_restart_loop.py, polling every 0.5 s as the CLI did), the process kept alive,
alternating which goes first. CMD fails on its first attempt and runs (sleeps) on the next;
no GPUs are needed, so capacity is present and no wait is involved. The time is measured from
attempt 1's `end_time` as Ray recorded it (the moment it was marked FAILED) to the moment this
script first sees attempt 2 RUNNING (polled every 20 ms). Prints a table and the ratio
(median supervisor / median CLI loop), then stops every job and the head.
Run: .venv/bin/python bench/restart_latency.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ray import __version__ as ray_version  # noqa: E402
from ray.job_submission import JobStatus, JobSubmissionClient  # noqa: E402

from tests import localray  # noqa: E402

TIMEOUT_S = 90.0


def script(marker: Path) -> str:
    return (f"import os, sys, time; p = {str(marker)!r}\n"
            "if os.path.exists(p): time.sleep(120); sys.exit(0)\n"
            "open(p, 'w').close(); sys.exit(1)")


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
    ids = sorted((j.submission_id for j in client.list_jobs()
                  if (j.metadata or {}).get("run") == run), key=lambda i: "-s" not in i)
    for job_id in ids:
        if not client.get_job_status(job_id).is_terminal():
            client.stop_job(job_id)
            deadline = time.monotonic() + 60
            while not client.get_job_status(job_id).is_terminal():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{job_id} did not stop")
                time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")
                and not k.startswith("JOBS_SUPERVISOR_")}
    head = localray.start()
    client = JobSubmissionClient(head.dashboard_url)
    tmp = Path(tempfile.mkdtemp(prefix="restart-bench-"))
    results: dict[str, list[float]] = {"supervisor": [], "cli": []}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        def measure(kind: str) -> None:
            run = f"rb-{kind}-{uuid.uuid4().hex[:6]}"
            env = dict(base_env)
            program = (["-m", "jobs", "run"] if kind == "supervisor"
                       else [str(ROOT / "bench" / "cli_restart_loop.py")])
            args = [sys.executable, *program, "--address", head.dashboard_url,
                    "--name", run, "--max-restarts", "1", "--", "python", "-c",
                    script(tmp / run)]
            proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
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

    def row(label: str, xs: list[float]) -> str:
        return (f"| {label:<44} | {statistics.median(xs):6.2f} | {min(xs):6.2f} | "
                f"{max(xs):6.2f} |")

    print(f"repetitions: {reps}, alternating order (seconds; median / min / max); "
          f"{os.cpu_count()} CPUs, Ray {ray_version}")
    print(f"| {'a1 FAILED -> a2 RUNNING':<44} | median |    min |    max |")
    print(f"|{'-' * 46}|--------|--------|--------|")
    print(row("supervisor on the head (poll 1 s)", results["supervisor"]))
    print(row("CLI loop (bench/cli_restart_loop.py, poll 0.5 s)", results["cli"]))
    ratio = statistics.median(results["supervisor"]) / statistics.median(results["cli"])
    print(f"restart latency ratio (median supervisor / median CLI loop): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
