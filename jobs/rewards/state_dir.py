"""The executor's state directory: a folder per live executor, removal that follows no link, the folders of dead executors.

$TMPDIR/rl-sandbox-<euid> holds boxinit, the precompiled header and one `executor-*` folder per
live executor (its binaries and each box's files); each executor holds an flock on its folder's
`alive.lock` while it lives, so the next one to start removes the folders of those that died.
A tree that cannot be removed (a box left it behind) is moved into `quarantine`.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path


def remove_tree(path: Path, quarantine: Path) -> bool:
    """Removes `path` without following any symlink in it; if that fails, moves it into `quarantine`."""
    if not os.path.lexists(path):
        return True

    def fix(
        func: Callable[[str], object], p: str, _exc: object
    ) -> None:  # non-root: a 0500 directory stops unlink; chmod only real directories
        parent = os.path.dirname(p)
        if not os.path.islink(parent) and os.path.isdir(parent):
            os.chmod(parent, 0o700)
        func(p)

    try:
        shutil.rmtree(path, onerror=fix)  # rmtree unlinks symlinks, never follows them
    except OSError:
        pass
    if not os.path.lexists(path):
        return True
    quarantine.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.rename(path, quarantine / f"{path.name}-{os.getpid()}-{threading.get_ident()}")
    except OSError:
        pass
    return False


def default_root() -> Path:
    """$TMPDIR/rl-sandbox-<euid>: one per user, so one user's executor never meets another's folder."""
    return Path(tempfile.gettempdir()) / f"rl-sandbox-{os.geteuid()}"


_LOCK_NAME = "alive.lock"


def claim_executor_dir(root: Path) -> tuple[Path, int]:
    """A fresh `executor-*` folder whose `alive.lock` this process holds (flock) while it lives.
    Locked before it takes its name, so a starting executor never sees it without its lock."""
    tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
    fd = os.open(tmp / _LOCK_NAME, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    final = root / f"executor-{tmp.name.removeprefix('.new-')}"
    os.rename(tmp, final)
    return final, fd


def remove_dead_executors(root: Path, quarantine: Path) -> int:
    """Removes the `executor-*` folders (and unfinished `.new-*` ones) of executors that died,
    whose files would otherwise fill the disk: a live executor holds its folder's flock, a dead
    one's lock is free."""
    removed = 0
    for entry in sorted(root.iterdir()):
        name = entry.name
        if not (name.startswith("executor-") or name.startswith(".new-")):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        try:
            fd = os.open(entry / _LOCK_NAME, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            fd = None
        except OSError:
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # alive
            elif name.startswith(".new-"):
                continue  # an executor between mkdtemp and its lock
            remove_tree(entry, quarantine)
            removed += 1
        finally:
            if fd is not None:
                os.close(fd)
    return removed
