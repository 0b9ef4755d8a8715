"""An in-memory runs root for the simulation: `jobs.head.files.Files` kept in a dict.

It honours the contract the run store relies on (jobs/head/files.py): `create_exclusive` fails
when the name exists, `write_atomic` replaces a file whole or not at all, `append` adds to the
end. A file's mtime is the simulated clock's time when it was last written. Faults: a full disk
(`full`: every write raises ENOSPC, nothing is changed, as a failed write of the temporary file
before its rename leaves the old file). Only one simulated process runs at a time
(tests/jobs/head/sim/world.py), so no locking is needed.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from jobs.head.files import Files


class MemFiles(Files):
    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.data: dict[str, bytes] = {}
        self.mtimes: dict[str, float] = {}
        self.dirs: set[str] = {"/"}
        # The names in each folder: listdir is the run store's most frequent call (every lease
        # renewal lists the run's folder), scanning every key made it most of a schedule's time.
        self.children: dict[str, set[str]] = {"/": set()}
        self.listed: dict[str, list[str]] = {}  # children sorted, until the folder changes
        self.full = False
        self.before_create: Callable[[Path], None] | None = None

    # ------------------------------------------------------------------ reads

    def _missing(self, path: Path) -> OSError:
        return FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))

    def read_text(self, path: Path) -> str:
        try:
            return self.data[str(path)].decode()
        except KeyError:
            raise self._missing(path) from None

    def is_file(self, path: Path) -> bool:
        return str(path) in self.data

    def is_dir(self, path: Path) -> bool:
        return str(path) in self.dirs

    def listdir(self, path: Path) -> list[str]:
        key = str(path)
        if key not in self.dirs:
            raise self._missing(path)
        listed = self.listed.get(key)
        if listed is None:  # sorted once per change of the folder, not at every renewal
            listed = self.listed[key] = sorted(self.children[key])
        return list(listed)

    def mtime(self, path: Path) -> float:
        try:
            return self.mtimes[str(path)]
        except KeyError:
            raise self._missing(path) from None

    # ------------------------------------------------------------------ writes

    def _writable(self, path: Path) -> str:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        key = str(path)
        if (key.rpartition("/")[0] or "/") not in self.dirs:
            raise self._missing(path.parent)
        return key

    def makedirs(self, path: Path) -> None:
        p = path
        while str(p) not in self.dirs:
            if str(p) in self.data:
                raise FileExistsError(errno.EEXIST, "File exists", str(p))
            self.dirs.add(str(p))
            self.children.setdefault(str(p), set())
            self.children.setdefault(str(p.parent), set()).add(p.name)
            self.listed.pop(str(p.parent), None)
            p = p.parent

    def unlink(self, path: Path) -> None:
        key = str(path)
        if self.data.pop(key, None) is not None:
            self.children[str(path.parent)].discard(path.name)
            self.listed.pop(str(path.parent), None)
        self.mtimes.pop(key, None)

    def _put(self, key: str, data: bytes) -> None:
        if key not in self.data:
            parent, _, name = key.rpartition("/")
            self.children[parent or "/"].add(name)
            self.listed.pop(parent or "/", None)
        self.data[key] = data
        self.mtimes[key] = self.now()

    def append(self, path: Path, data: bytes) -> None:
        key = self._writable(path)
        self._put(key, self.data.get(key, b"") + data)

    def write_atomic(self, path: Path, text: str) -> None:
        self._put(self._writable(path), text.encode())

    def create(self, path: Path, flags: int) -> None:
        """open(2)'s semantics for the flags the run store asks for: with O_EXCL a name that
        exists fails (the create that lost the race), without it the file is opened, and
        emptied with O_TRUNC. `before_create` runs first: the simulation switches to another
        taker there, between its lease read and this create."""
        if self.before_create is not None:
            self.before_create(path)
        key = self._writable(path)
        exists = key in self.data or key in self.dirs
        if exists and flags & os.O_EXCL:
            raise FileExistsError(errno.EEXIST, "File exists", key)
        if key in self.dirs:
            raise IsADirectoryError(errno.EISDIR, "Is a directory", key)
        if not exists or flags & os.O_TRUNC:
            self._put(key, b"")
