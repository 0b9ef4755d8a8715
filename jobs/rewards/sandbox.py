"""Compiles and runs untrusted C++ against tests under OS limits: the executor behind the code-contests reward.

Each program (the compiler, then every test run) is started through util-linux wrappers that all `exec`
in place, so the pid we wait on is the program itself:

    unshare --net --mount --ipc -- sh -c <mount script> -- setpriv --reuid U ... -- prlimit <limits> -- ./prog

* **privileged** mode (we are root and `unshare` works): a fresh network namespace with no interfaces
  but a down loopback (connect() fails), a private mount namespace in which every world-writable
  directory (/tmp, /var/tmp, /run/lock, /dev/shm) is re-mounted read-only except the run's own
  directory, and a uid of its own from a pool (`UID_POOL`), locked across processes with flock.
  A uid of its own is what makes RLIMIT_NPROC a real per-run cap (the kernel counts processes per
  real uid and does not enforce the limit for root), and lets us kill everything the run left
  behind with kill(-1) as that uid, even processes that left the process group with setsid().
* **unprivileged** mode (the cluster service runs as non-root inside gVisor): the same rlimits and
  process-group kill, the private directory, an empty environment. There, network and filesystem
  containment come from the pod (NetworkPolicy denying egress, gVisor, read-only root filesystem),
  and RLIMIT_NPROC, counted against the service's own uid which already runs more threads than
  the cap, makes fork() fail outright.

Every run gets an empty environment (no token can be read), RLIMIT_CPU, a wall-clock timeout that
SIGKILLs the whole process group, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_NOFILE, RLIMIT_FSIZE (stdout goes
to a file, so the size cap is enforced by the kernel and the captured output is bounded too), and a
private temporary directory removed afterwards.
"""

from __future__ import annotations

import fcntl
import functools
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Iterator, Sequence

from pydantic import BaseModel, ConfigDict, Field

# uids with no passwd entry, far above any distro's ranges; one per concurrently running program.
UID_POOL = range(1_500_000, 1_500_000 + 512)
# Directories any uid may write to on a Debian-like image; the sandbox sees them read-only.
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm")
# A runnable program starved of CPU by a loaded machine may take this many times its time limit
# in wall time before it is killed (the CPU time it used still judges it).
STARVED_WALL_FACTOR = 3
COMPILER = ("g++", "-std=c++17", "-O2", "-pipe")
_MOUNT_SCRIPT = """set -e
run="$1"; shift
{mount} --bind "$run" "$run"
for d in {dirs}; do
  if [ -d "$d" ]; then {mount} --rbind "$d" "$d"; {mount} -o remount,bind,ro "$d"; fi
done
unset PWD OLDPWD  # dash exports PWD; the program gets an empty environment
exec "$@"
"""


class Limits(BaseModel):
    """Per-problem limits; every test of a solution runs under the same ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time_s: float = Field(2.0, gt=0, le=60, description="CPU seconds per test (the problem's time limit)")
    memory_bytes: int = Field(256 * 2**20, ge=16 * 2**20, le=8 * 2**30, description="address-space limit per test")
    wall_margin_s: float = Field(0.5, ge=0, le=30, description="wall-clock slack over time_s before SIGKILL")
    compile_time_s: float = Field(30.0, gt=0, le=300)
    output_bytes: int = Field(16 * 2**20, ge=1024, le=256 * 2**20, description="stdout cap per test")
    processes: int = Field(8, ge=1, le=256, description="RLIMIT_NPROC per program")
    open_files: int = Field(32, ge=8, le=4096)


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    input: str
    output: str


class Status(str, Enum):
    passed = "passed"
    wrong_answer = "wrong_answer"
    time_limit = "time_limit"
    runtime_error = "runtime_error"
    output_limit = "output_limit"


class CaseResult(BaseModel):
    status: Status
    wall_s: float
    exit_code: int | None = None


class RunResult(BaseModel):
    compiled: bool
    compile_error: str = ""
    results: list[CaseResult] = []
    isolation: str

    @property
    def passed(self) -> int:
        return sum(r.status is Status.passed for r in self.results)


@functools.cache
def _tool(name: str) -> str:
    path = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if path is None:
        raise RuntimeError(f"sandbox: `{name}` not found (install util-linux)")
    return path


_mode_lock = threading.Lock()
_mode: str | None = None


def isolation_mode() -> str:
    """'privileged' when we are root and a network+mount namespace can be made, else 'unprivileged'."""
    global _mode
    with _mode_lock:
        if _mode is None:
            _mode = "unprivileged"
            if os.geteuid() == 0:
                probe = subprocess.run([_tool("unshare"), "--net", "--mount", "--ipc", "true"],
                                       env={}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if probe.returncode == 0:
                    _mode = "privileged"
        return _mode


class _UidLease:
    """A uid from UID_POOL held by an flock on its lock file, so concurrent executors never share one."""

    _dir = Path("/run/rl-sandbox-uids")

    def __init__(self) -> None:
        self._dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        start = random.randrange(len(UID_POOL))
        for i in range(len(UID_POOL)):
            uid = UID_POOL[(start + i) % len(UID_POOL)]
            fd = os.open(self._dir / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError(f"sandbox: all {len(UID_POOL)} sandbox uids are in use")

    def release(self) -> None:
        reap_uid(self.uid)
        os.close(self._fd)


def pids_of_uid(uid: int) -> list[int]:
    """Processes whose real uid is `uid` (read from /proc/<pid>/status)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry.name))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def reap_uid(uid: int, attempts: int = 50) -> None:
    """Kill every process of `uid` (kill(-1) sent *as* that uid reaches exactly its own processes)."""
    for _ in range(attempts):
        if not pids_of_uid(uid):
            return
        # procps' kill(1) refuses -1 as a pid, so the interpreter sends it.
        subprocess.run([_tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                        sys.executable, "-I", "-S", "-c", "import os, signal; os.kill(-1, signal.SIGKILL)"],
                       env={}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.02)
    raise RuntimeError(f"sandbox: processes of uid {uid} survive SIGKILL: {pids_of_uid(uid)}")


def _prlimit_args(cpu_s: float, memory: int, processes: int | None, open_files: int, fsize: int) -> list[str]:
    cpu = max(1, math.ceil(cpu_s))
    # soft CPU limit sends SIGXCPU; the hard one a second later is a SIGKILL backstop.
    nproc = [] if processes is None else [f"--nproc={processes}"]
    return [f"--cpu={cpu}:{cpu + 1}", f"--as={memory}", *nproc,
            f"--nofile={open_files}", f"--fsize={fsize}", "--core=0", "--"]


def _command(argv: Sequence[str], run_dir: Path, uid: int | None, prlimits: list[str]) -> list[str]:
    limited = [_tool("prlimit"), *prlimits, *argv]
    if uid is None:
        return limited
    return [_tool("unshare"), "--net", "--mount", "--ipc", "--propagation", "private", "--",
            _tool("sh"), "-c", _MOUNT_SCRIPT.format(mount=_tool("mount"), dirs=" ".join(WORLD_WRITABLE)),
            "sandbox", str(run_dir), _tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--",
            *limited]


@dataclass
class _Exit:
    code: int | None  # negative: killed by that signal (subprocess convention)
    timed_out: bool
    wall_s: float
    cpu_s: float


def _spawn(cmd: list[str], cwd: Path, env: dict[str, str], stdin: int, stdout: int, stderr: int,
           wall_s: float, cpu_s: float | None = None, max_wall_s: float | None = None) -> _Exit:
    """Runs `cmd` in a new session; SIGKILLs its process group at the wall deadline or when it exits.

    With `cpu_s`, a program still runnable at `wall_s` that has used less than `cpu_s` of CPU was
    starved by a loaded machine, not slow: it gets until `max_wall_s` to use its CPU time. A sleeping
    or blocked one is killed at `wall_s`.
    """
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                            start_new_session=True, close_fds=True)
    deadline, hard = start + wall_s, start + max(wall_s, max_wall_s or wall_s)
    pause, timed_out = 0.001, False
    # wait4 rather than Popen.wait: its rusage gives the CPU time, which RLIMIT_CPU only bounds to the second.
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if not timed_out and now >= deadline:
            starved = cpu_s is not None and now < hard and _runnable_below(proc.pid, cpu_s)
            if starved:
                deadline = now + 0.05
            else:
                timed_out = True
                _killpg(proc.pid)
                pause = 0.001
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    wall = time.monotonic() - start
    # Whatever the leader left in its group goes too (orphans keep the pgid).
    _killpg(proc.pid)
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    return _Exit(code, timed_out, wall, usage.ru_utime + usage.ru_stime)


_TICKS = os.sysconf("SC_CLK_TCK")


def _runnable_below(pid: int, cpu_s: float) -> bool:
    """The process is runnable (state R) and has used less than `cpu_s` CPU seconds (proc(5) stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return fields[0] == "R" and (int(fields[11]) + int(fields[12])) / _TICKS < cpu_s


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@contextmanager
def _leased(privileged: bool) -> Iterator[int | None]:
    """Yields a pool uid (released and its processes reaped afterwards), or None unprivileged."""
    if not privileged:
        yield None
        return
    lease = _UidLease()
    try:
        yield lease.uid
    finally:
        lease.release()


def _chown(path: Path, uid: int | None, mode: int) -> None:
    if uid is not None:
        os.chown(path, uid, uid)
    os.chmod(path, mode)


def _rmtree(path: Path) -> None:
    def fix(func, p, _exc):  # a program may have chmod'ed its own dir to 000
        os.chmod(p if os.path.isdir(p) else os.path.dirname(p), 0o700)
        func(p)
    shutil.rmtree(path, onerror=fix)


def _normalise(text: str) -> str:
    return text.strip()


class Executor:
    """Compiles one solution and runs its tests, `workers` at a time."""

    def __init__(self, workers: int | None = None, root: Path | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.root = root or Path(tempfile.gettempdir()) / "rl-sandbox"
        self.root.mkdir(mode=0o711, parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        self.privileged = isolation_mode() == "privileged"
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sandbox")

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def run(self, code: str, tests: Sequence[Case], limits: Limits) -> RunResult:
        mode = "privileged" if self.privileged else "unprivileged"
        work = Path(tempfile.mkdtemp(prefix="sol-", dir=self.root))
        try:
            os.chmod(work, 0o711)
            err = self._compile(code, work, limits)
            if err is not None:
                return RunResult(compiled=False, compile_error=err, isolation=mode)
            binary = work / "build" / "prog"
            futures = [self._pool.submit(self._test, binary, work, i, t, limits) for i, t in enumerate(tests)]
            return RunResult(compiled=True, results=[f.result() for f in futures], isolation=mode)
        finally:
            _rmtree(work)

    def _compile(self, code: str, work: Path, limits: Limits) -> str | None:
        build = work / "build"
        build.mkdir()
        (build / "main.cpp").write_text(code)
        log = work / "compile.log"
        with _leased(self.privileged) as uid:
            _chown(build, uid, 0o700)
            _chown(build / "main.cpp", uid, 0o600)
            # The compiler runs sandboxed too: `#include "/path/to/secret"` would echo the file in errors.
            cmd = _command([*COMPILER, "-o", "prog", "main.cpp"], build, uid,
                           # Unprivileged, RLIMIT_NPROC counts the service's own threads: g++ could not fork.
                           _prlimit_args(limits.compile_time_s, 2 * 2**30, 16 if uid is not None else None,
                                         64, 256 * 2**20))
            with open(log, "wb") as out:
                ex = _spawn(cmd, build, {"PATH": "/usr/bin:/bin", "TMPDIR": str(build)},
                            subprocess.DEVNULL, out.fileno(), subprocess.STDOUT, limits.compile_time_s)
        if ex.timed_out:
            return f"compilation exceeded {limits.compile_time_s:g}s"
        if ex.code != 0 or not (build / "prog").is_file():
            with open(log, "rb") as f:
                return f.read(2000).decode(errors="replace") or f"g++ exited with {ex.code}"
        if self.privileged:  # the tests' uids may execute, not change, the binary
            os.chown(build, 0, 0)
            os.chown(build / "prog", 0, 0)
        os.chmod(build, 0o711)
        os.chmod(build / "prog", 0o755)
        return None

    def _test(self, binary: Path, work: Path, index: int, test: Case, limits: Limits) -> CaseResult:
        run_dir = work / f"t{index}"
        run_dir.mkdir()
        in_path, out_path = work / f"t{index}.in", work / f"t{index}.out"
        in_path.write_text(test.input)
        os.chmod(in_path, 0o600)
        with _leased(self.privileged) as uid:
            _chown(run_dir, uid, 0o700)
            cmd = _command([str(binary)], run_dir, uid,
                           _prlimit_args(limits.time_s, limits.memory_bytes, limits.processes,
                                         limits.open_files, limits.output_bytes))
            with open(in_path, "rb") as fin, open(out_path, "wb") as fout:
                os.chmod(out_path, 0o600)
                ex = _spawn(cmd, run_dir, {}, fin.fileno(), fout.fileno(), subprocess.DEVNULL,
                            limits.time_s + limits.wall_margin_s, cpu_s=limits.time_s,
                            max_wall_s=STARVED_WALL_FACTOR * limits.time_s + limits.wall_margin_s)
        return _judge(ex, out_path, test, limits)


def _judge(ex: _Exit, out_path: Path, test: Case, limits: Limits) -> CaseResult:
    wall = round(ex.wall_s, 4)
    if ex.timed_out or ex.cpu_s > limits.time_s or ex.code == -signal.SIGXCPU:
        return CaseResult(status=Status.time_limit, wall_s=wall, exit_code=ex.code)
    if ex.code == -signal.SIGXFSZ or out_path.stat().st_size > limits.output_bytes:
        return CaseResult(status=Status.output_limit, wall_s=wall, exit_code=ex.code)
    if ex.code != 0:
        return CaseResult(status=Status.runtime_error, wall_s=wall, exit_code=ex.code)
    with open(out_path, "rb") as f:
        got = f.read(limits.output_bytes).decode(errors="replace")
    ok = _normalise(got) == _normalise(test.output)
    return CaseResult(status=Status.passed if ok else Status.wrong_answer, wall_s=wall, exit_code=0)
