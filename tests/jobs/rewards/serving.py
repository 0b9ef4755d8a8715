"""The executor service started as the image starts it (a subprocess on loopback), for the tests."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from components.k8s.sandbox import service_command
from jobs.rewards import SANDBOX_TOKEN_ENV, uids

REPO = Path(__file__).resolve().parents[3]
SOCKET_TIMEOUT_S = 2.0


def pool_pids() -> list[int]:
    """Live processes of this run's own uid slice (conftest.py), never of another copy's."""
    return [pid for uid in uids.UID_POOL for pid in uids.live_pids_of_uid(uid)]


class Service:
    def __init__(self, **extra_env: str) -> None:
        self.token = secrets.token_hex(24)
        argv = service_command(0, 2, host="127.0.0.1", socket_timeout_s=SOCKET_TIMEOUT_S)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(REPO),
            SANDBOX_TOKEN_ENV: self.token,
            # this run's slice of uids (conftest.py), so pool_pids judges only what this run started
            uids.UID_POOL_ENV: f"{uids.UID_POOL.start}:{len(uids.UID_POOL)}",
            **extra_env,
        }
        self.proc = subprocess.Popen(
            [sys.executable, *argv[1:]],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()  # printed once the executor has built a box
        assert "sandbox executor on 127.0.0.1:" in line, self.proc.stderr.read()
        self.port = int(line.split(":")[1].split()[0])
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()

    def healthy_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=seconds) as r:
                    return r.status == 200
            except OSError:
                time.sleep(0.1)
        return False
