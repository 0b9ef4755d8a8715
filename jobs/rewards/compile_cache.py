"""Compiling once for many boxes: the compiler and its flags, the header precompiled once per root, the binaries cached per source.

`#include <bits/stdc++.h>` hits the precompiled header (`bits/stdc++.h.gch`, same flags), which
cuts a typical compile by 4-6x; identical sources within the executor's lifetime (a GRPO batch has
many) are compiled once, bounded in bytes, and a binary is never removed while a run still uses it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

COMPILER = ("g++", "-std=c++17", "-O2", "-pipe")
PCH_HEADER = "bits/stdc++.h"
CACHE_ENTRIES = 512
# Bytes of compiled binaries kept: a 200 MiB array per distinct source would otherwise fill the
# disk; binaries still used by a run are kept past it, so the excess is at most one per run.
CACHE_BYTES = 1 * 2**30
# The largest file a compile may write (its binary, its object file): RLIMIT_FSIZE in its box and
# the copy's check. A 200 MiB initialised array takes a policy one line; each running compile holds
# its binary twice on the scratch disk (the compiler's output, the copy), so the pod's scratch
# must hold concurrency x 2 x this beside CACHE_BYTES (tests/components/k8s/test_sandbox.py).
MAX_BINARY_BYTES = 64 * 2**20
# What the C library prints for ENOSPC (strerror(3)), as the linker reports a full disk.
DISK_FULL = os.strerror(errno.ENOSPC)
# What g++'s driver prints when a tool it ran died of SIGXFSZ, i.e. wrote past RLIMIT_FSIZE
# (strsignal(3) of SIGXFSZ; gcc/gcc.cc execute(): "%s signal terminated program %s").
FILE_TOO_LARGE = signal.strsignal(signal.SIGXFSZ) or "File size limit exceeded"


class CompileCache:
    """Binary path or compile error per source digest; one compile per digest even when asked
    concurrently. Bounded by CACHE_BYTES and CACHE_ENTRIES; an entry in use (`acquire` without its
    `release`) is never evicted, so a binary cannot vanish under tests still queued for it."""

    def __init__(
        self, folder: Path, max_bytes: int = CACHE_BYTES, max_entries: int = CACHE_ENTRIES
    ) -> None:
        self.folder = folder
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self._entries: OrderedDict[str, tuple[str | None, str, int]] = OrderedDict()
        self._refs: dict[str, int] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.bytes = 0

    def acquire(
        self, key: str, compile_fn: Callable[[], tuple[str | None, str]]
    ) -> tuple[str | None, str]:
        with self._lock:
            self._refs[key] = self._refs.get(key, 0) + 1
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][:2]
            key_lock = self._locks.setdefault(key, threading.Lock())
        try:
            with key_lock:
                with self._lock:
                    if key in self._entries:
                        return self._entries[key][:2]
                binary, error = compile_fn()
                size = os.path.getsize(binary) if binary else 0
                with self._lock:
                    self._entries[key] = (binary, error, size)
                    self.bytes += size
                    self._locks.pop(key, None)
                    self._evict()
                return binary, error
        except BaseException:
            self.release(key)
            raise

    def release(self, key: str) -> None:
        with self._lock:
            left = self._refs.get(key, 0) - 1
            if left > 0:
                self._refs[key] = left
            else:
                self._refs.pop(key, None)
            self._evict()

    def _evict(self) -> None:  # with self._lock held
        for old in list(self._entries):
            if self.bytes <= self.max_bytes and len(self._entries) <= self.max_entries:
                return
            if self._refs.get(old):
                continue
            binary, _err, size = self._entries.pop(old)
            self.bytes -= size
            if binary:
                Path(binary).unlink(missing_ok=True)


def disk_free(path: Path) -> int:
    """Bytes an unprivileged writer may still use on `path`'s filesystem."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def compile_error(log: str, code: int | None) -> str:
    """The compile error a solution is scored on, from the compiler's log; a tool that wrote past
    the output cap is named as such."""
    if FILE_TOO_LARGE in log:
        return f"the compiler's output is over the {MAX_BINARY_BYTES >> 20} MiB limit: {log}"
    return log or f"g++ exited with {code}"


def take_binary(produced: Path, target: Path) -> tuple[str | None, str]:
    """Copies the compiler's output (a regular file, never through a symlink, at most
    MAX_BINARY_BYTES) to a root-owned 0755 `target`: its path, or why not. A copy the disk had
    no room for is removed and answered with DISK_FULL, so no partial binary stays behind."""
    try:
        fd = os.open(produced, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None, "the compiler wrote no binary"
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None, "the compiler's output is not a regular file"
        if st.st_size > MAX_BINARY_BYTES:
            return None, f"the compiler's output is over the {MAX_BINARY_BYTES >> 20} MiB limit"
        try:
            with open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
        except OSError as e:
            target.unlink(missing_ok=True)
            if e.errno == errno.ENOSPC:
                return None, DISK_FULL
            raise
    os.chmod(target, 0o755)
    return str(target), ""


def build_pch(root: Path) -> Path:
    """bits/stdc++.h precompiled with COMPILER's flags, once per root (keyed by compiler version and flags)."""
    version = subprocess.run(
        [COMPILER[0], "-dumpfullversion", "-dumpmachine"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    key = hashlib.sha256((version + " ".join(COMPILER) + "v2").encode()).hexdigest()[:16]
    target = root / f"pch-{key}"
    if (target / f"{PCH_HEADER}.gch").is_file():
        return target
    tmp = Path(tempfile.mkdtemp(prefix=".pch-", dir=root))
    (tmp / "bits").mkdir()
    wrapper = tmp / "wrapper.h"
    # The marker macro lets a test tell a compile that used the .gch from one that fell back to the header.
    wrapper.write_text(f"#include <{PCH_HEADER}>\n#define RL_SANDBOX_PCH 1\n")
    subprocess.run(
        [*COMPILER, "-x", "c++-header", str(wrapper), "-o", str(tmp / f"{PCH_HEADER}.gch")],
        check=True,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    wrapper.unlink()
    for p in (tmp, tmp / "bits"):
        os.chmod(p, 0o755)
    os.chmod(tmp / f"{PCH_HEADER}.gch", 0o644)
    try:
        os.rename(tmp, target)
    except OSError:  # another executor finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return target
