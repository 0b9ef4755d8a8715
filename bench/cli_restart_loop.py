"""The benchmark's baseline: the restart loop that ran inside the CLI before the supervisor existed.

`python bench/cli_restart_loop.py --address URL --name RUN --max-restarts N -- COMMAND ...`
submits attempt 1 of RUN (`RUN-a1`), polls its status every 0.5 s as the old CLI did, and
resubmits a FAILED attempt as `RUN-a2`, ... until one succeeds, is stopped, or restarts run out.
It stops when this process stops: the weakness the supervisor on the head removed. Kept here,
outside the product, only so bench/restart_latency.py measures against the same baseline.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.client.api import JobsAPI
from jobs.client.types import JobStatus
from jobs.head.protocol import COMMAND, attempt_id

POLL_S = 0.5


def should_restart(status: JobStatus, restarts_left: int) -> bool:
    """Only failures are restarted, never a stopped job, and only while restarts are left."""
    return status == JobStatus.FAILED and restarts_left > 0


def watch(api: JobsAPI, job_id: str) -> JobStatus:
    while not (status := api.get_job_status(job_id)).is_terminal():
        time.sleep(POLL_S)
    return status


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--max-restarts", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    api = JobsAPI(args.address)
    attempt, restarts_left = 1, args.max_restarts
    while True:
        job_id = api.submit_job(
            entrypoint=shlex.join(command),
            submission_id=attempt_id(args.name, attempt),
            metadata={"run": args.name, "attempt": str(attempt), "kind": COMMAND},
        )
        status = watch(api, job_id)
        if not should_restart(status, restarts_left):
            return 0 if status == JobStatus.SUCCEEDED else 1
        restarts_left -= 1
        attempt += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
