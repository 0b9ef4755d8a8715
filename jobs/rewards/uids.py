"""The pool uids boxes run as: one leased per box with an flock, never one a task still holds, reaped when the box ends.

Root only (jobs/rewards/box.py `privileged`): each box then runs as a uid of its own, so
RLIMIT_NPROC caps it and no box can signal or read another. The lock files live in a directory
only this user can reach (`private_dir`), which the executor's state directory uses too.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import stat
import threading
import time
from pathlib import Path

# uids with no passwd entry, far above any distro's ranges; one per box running at once.
DEFAULT_UID_POOL = range(1_500_000, 1_500_000 + 512)
# "START:COUNT": another slice of uids (tests give each copy of the suite its own, so each judges
# only the processes of uids it leased).
UID_POOL_ENV = "RL_SANDBOX_UID_POOL"
MIN_POOL_UID = 100_000  # below this, distros hand out uids (login.defs SUB_UID_MIN is 100000)
# The leases are kernel-wide (a pool uid is the same uid in every mount namespace), so the lock
# files live in one fixed root-only place, never under $TMPDIR: two executors with different
# TMPDIRs would lease the same uids and kill each other's programs.
LEASE_DIR = Path("/run/rl-sandbox-uids")


def uid_pool_from(raw: str | None) -> range:
    """The pool named by $RL_SANDBOX_UID_POOL ("START:COUNT"), or DEFAULT_UID_POOL when unset."""
    if not raw:
        return DEFAULT_UID_POOL
    start_s, sep, count_s = raw.partition(":")
    try:
        start, count = int(start_s), int(count_s)
    except ValueError:
        start, count = -1, -1
    if not sep or start < MIN_POOL_UID or not 1 <= count <= 65536 or start + count > 2**31 - 2:
        raise ValueError(
            f"{UID_POOL_ENV}={raw!r}: expected START:COUNT with START >= {MIN_POOL_UID} "
            "and 1 <= COUNT <= 65536"
        )
    return range(start, start + count)


UID_POOL = uid_pool_from(os.environ.get(UID_POOL_ENV))

# How long the processes of a box's uid may take to disappear after the box ended before the uid
# is quarantined (never handed out again by this process) and the run scored as a failure.
REAP_DEADLINE_S = 5.0


def private_dir(path: Path) -> Path:
    """`path` as a directory only this user can reach, or RuntimeError: never trusted on its name.

    Created 0700 when missing. An existing one must be a real directory (not a symlink), owned by
    this process's euid and writable by no one else; it is then made 0700. Anything else was made
    by someone else (a local user who creates `$TMPDIR/rl-sandbox` first could
    plant the `boxinit` every box runs as root), so it is refused, not repaired."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise RuntimeError(
            f"sandbox: state directory {path} is not a directory of ours ({e.strerror}); "
            "refusing to use it: remove it or point TMPDIR elsewhere"
        ) from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise RuntimeError(
                f"sandbox: state directory {path} is owned by uid {st.st_uid} with mode "
                f"{stat.S_IMODE(st.st_mode):04o}; it must be owned by uid {os.geteuid()} and "
                "writable by no one else: refusing to use it (remove it or point TMPDIR elsewhere)"
            )
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def _lease_dir() -> Path:
    LEASE_DIR.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    return private_dir(LEASE_DIR)


class UidLease:
    """A uid from UID_POOL held by an flock on its lock file, so concurrent executors never share one.

    A uid that still has any task is skipped too, so a lease never takes a uid in use: a live
    process (a box of an executor whose lock lives elsewhere: another mount namespace, an older
    version) or a zombie. A zombie counts against the uid's RLIMIT_NPROC until its parent reaps it,
    and a released uid can keep some for a while: the processes of a box that was killed, or of a
    user-namespace executor run as the uid, are reaped by their namespace's dying init or by the
    host's PID 1 (seen as a flake: three zombie `bwrap`s of a just-released uid, parent PID 1,
    reaped ~2 s later, made a 1-process box on that uid fail execve with EAGAIN, exit 127)."""

    _quarantined: set[int] = set()
    _lock = threading.Lock()

    def __init__(self) -> None:
        folder = _lease_dir()
        pool = UID_POOL
        start = random.randrange(len(pool))
        for i in range(len(pool)):
            uid = pool[(start + i) % len(pool)]
            if uid in self._quarantined:
                continue
            fd = os.open(folder / str(uid), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if tasks_of_uid(uid):
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError(f"sandbox: all {len(pool)} sandbox uids are in use or quarantined")

    def release(self) -> bool:
        """Kills what is left of the uid; False (and the uid kept out of the pool) if that fails."""
        if reap_uid(self.uid):
            os.close(self._fd)
            return True
        with self._lock:
            self._quarantined.add(
                self.uid
            )  # the flock stays held: no other executor takes it either
        return False


def live_pids_of_uid(uid: int) -> list[int]:
    """Processes of `uid` that are not zombies (a zombie has exited; its parent reaps it): what
    is left to kill."""
    return _pids_of_uid(uid, zombies=False)


def tasks_of_uid(uid: int) -> list[int]:
    """Every process of `uid`, zombies included: what the kernel counts against the uid's
    RLIMIT_NPROC (a task is uncounted only when reaped, release_task in kernel/exit.c)."""
    return _pids_of_uid(uid, zombies=True)


def _pids_of_uid(uid: int, zombies: bool) -> list[int]:
    # One stat of each /proc/PID directory, not a read of its status file: this runs twice per
    # box over every process of the host, and the kernel formats the whole status file for each
    # read (2.8 ms a scan of 131 processes here, against 0.4 ms for the stats). The directory's
    # owner is the task's effective uid whatever its state: task_dump_owner in fs/proc/base.c
    # makes the 0555 /proc/PID directory an exception to the rule that a non-dumpable task's
    # files show root (proc(5)), and a zombie keeps its credentials until it is reaped
    # (tests/jobs/rewards/test_uid_reuse.py holds both). The kernel counts RLIMIT_NPROC by the
    # real uid; a pool uid's task with another effective uid needs a setuid exec, which boxinit's
    # no_new_privs rules out in a box, and a box started on a uid with such a task anyway fails
    # its execve with EAGAIN and says so (start_error), never scoring the program.
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
        except OSError:
            continue
        if zombies:
            found.append(int(entry.name))
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                state = _field(f.read(4096), b"\nState:")
        except OSError:
            continue  # reaped meanwhile
        if state[:1] not in b"ZX":
            found.append(int(entry.name))
    return found


def _field(status: bytes, name: bytes) -> bytes:
    """The value of one `Name:\tvalue` line of a /proc status file (b"" when absent)."""
    at = status.find(name)
    if at < 0:
        return b""
    end = status.find(b"\n", at + 1)
    return status[at + len(name) : end if end >= 0 else len(status)].strip()


def reap_uid(uid: int, deadline_s: float = REAP_DEADLINE_S) -> bool:
    """SIGKILLs every live process of `uid` until none is left or the deadline passes."""
    deadline = time.monotonic() + deadline_s
    while True:
        pids = live_pids_of_uid(uid)
        if not pids:
            return True
        if time.monotonic() >= deadline:
            return False
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)


class Leased:
    """A pool uid for one box when privileged (None otherwise); `clean` tells whether it was reaped."""

    def __init__(self, enabled: bool) -> None:
        self.lease = UidLease() if enabled else None
        self.clean = True

    @property
    def uid(self) -> int | None:
        return self.lease.uid if self.lease else None

    def __enter__(self) -> Leased:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.lease is not None:
            self.clean = self.lease.release()
