"""Benchmark: submit-to-RUNNING through `python -m jobs`, and its overhead against `ray job submit`.

Starts its own private Ray head on loopback (jobs.localray), runs N repetitions of
  (a) `python -m jobs run --address URL -- python -c 'sleep'` then polls until RUNNING, and
  (b) the same job via `ray job submit --no-wait` (wall time of each CLI process),
prints a table and the CLI overhead ratio (ours / ray's), then stops the head.
Run: .venv/bin/python bench/submit_latency.py [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ray.job_submission import JobStatus, JobSubmissionClient  # noqa: E402

from jobs import localray  # noqa: E402

ENTRY = ["python", "-c", "import time; time.sleep(30)"]


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def until_running(client: JobSubmissionClient, job_id: str, since: float) -> float:
    while client.get_job_status(job_id) != JobStatus.RUNNING:
        time.sleep(0.05)
    return time.perf_counter() - since


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS")}
    t0 = time.perf_counter()
    head = localray.start()
    print(f"ray head up in {time.perf_counter() - t0:.1f} s at {head.dashboard_url}", file=sys.stderr)
    client = JobSubmissionClient(head.dashboard_url)
    ours_cli, ours_running, ray_cli, ray_running = [], [], [], []
    try:
        for i in range(reps):
            run = f"bench-{uuid.uuid4().hex[:6]}"
            start = time.perf_counter()
            ours_cli.append(timed([sys.executable, "-m", "jobs", "run", "--address",
                                   head.dashboard_url, "--name", run, "--", *ENTRY], env))
            ours_running.append(until_running(client, f"{run}-a1", start))
            client.stop_job(f"{run}-a1")

            sid = f"raybench-{uuid.uuid4().hex[:6]}"
            start = time.perf_counter()
            ray_cli.append(timed([str(localray.venv_bin() / "ray"), "job", "submit", "--address",
                                  head.dashboard_url, "--submission-id", sid, "--no-wait", "--",
                                  *ENTRY], env))
            ray_running.append(until_running(client, sid, start))
            client.stop_job(sid)
            for job_id in (f"{run}-a1", sid):
                while not client.get_job_status(job_id).is_terminal():
                    time.sleep(0.1)
    finally:
        head.stop()

    def row(label: str, xs: list[float]) -> str:
        return (f"| {label:<40} | {statistics.median(xs):6.2f} | {min(xs):6.2f} | "
                f"{max(xs):6.2f} |")

    print(f"repetitions: {reps} (seconds; median / min / max)")
    print(f"| {'measure':<40} | median |    min |    max |")
    print(f"|{'-' * 42}|--------|--------|--------|")
    print(row("python -m jobs run: CLI wall time", ours_cli))
    print(row("ray job submit --no-wait: CLI wall time", ray_cli))
    print(row("python -m jobs run: submit -> RUNNING", ours_running))
    print(row("ray job submit: submit -> RUNNING", ray_running))
    ratio = statistics.median(ours_cli) / statistics.median(ray_cli)
    print(f"CLI overhead ratio (median jobs / median ray job submit): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
