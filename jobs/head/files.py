"""The file operations a run's record needs (jobs/head/run_store.py), and their POSIX implementation.

The run store's atomicity contract lives in these few operations, nowhere else:
  create_exclusive  O_EXCL: of two creators of one name exactly one succeeds (the lease's rule)
  write_atomic      a temporary file written and fsynced, then renamed over the name: a reader
                    sees the old content or the new, never a mix
  append            O_APPEND, fsynced: a head lost mid-write loses at most the line being written
Production uses `LOCAL` (the runs root on Lustre). The deterministic simulation of supervision
(tests/jobs/head/sim/) passes an in-memory implementation honouring the same contract (with its
own faults: a full disk, a torn append), so thousands of schedules run in seconds through the
same `RunStore` code, as `jobs/head/clock.py` does for time.
Standard library only: it runs in the supervisor and the re-armer on the head, and in the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path


class Files:
    """POSIX files; a simulation subclasses it."""

    def makedirs(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)

    def read_text(self, path: Path) -> str:
        """The file's text; OSError when it cannot be read (absent included)."""
        return path.read_text()

    def is_file(self, path: Path) -> bool:
        return path.is_file()

    def is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def listdir(self, path: Path) -> list[str]:
        """The names in a folder; OSError when it is not one."""
        return os.listdir(path)

    def mtime(self, path: Path) -> float:
        return path.stat().st_mtime

    def unlink(self, path: Path) -> None:
        """Removed; nothing when it is already gone."""
        path.unlink(missing_ok=True)

    def append(self, path: Path, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_atomic(self, path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def create_exclusive(self, path: Path) -> None:
        """Create an empty file; FileExistsError when the name exists (O_EXCL)."""
        self.create(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)

    def create(self, path: Path, flags: int) -> None:
        """open(2) with `flags` and close: the one place the lease's create meets the file
        system, so the simulation's runs root honours exactly the flags asked for here."""
        os.close(os.open(path, flags, 0o644))


LOCAL = Files()
