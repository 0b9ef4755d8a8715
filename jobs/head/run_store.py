"""A run's record on shared storage (the runs root on Lustre): spec, decisions, and its lease.

Layout, one folder per run: `<runs root>/<run>/supervision/`
  spec.json     what the supervisor drives (written once, atomically)
  events.jsonl  every decision, append-only, one JSON object a line, flushed and fsynced per
                event, so a head lost mid-run loses at most the line being written
  lease.<gen>   who drives the run: {"holder", "gen", "renewed", "ttl_s", "head"}
  progress.<attempt>.log  the attempt's step lines, kept when it ended (its goodput)
The lease is fenced by generation: taking a run over creates `lease.<gen+1>` with O_EXCL, which
one creator wins on a POSIX file system (Lustre included), and a holder that sees a higher
generation has lost the run and stops driving it. A lease not renewed within its ttl is
expired: the run is unsupervised and a re-armer may take it (jobs/head/rearm.py). A lease file
created but never written (its taker was killed between the create and the write, or the disk
was full) is expired once `UNWRITTEN_TTL_S` has passed since its creation: it can never be
renewed, so it must not keep the run from being re-armed forever.
Standard library only: it runs in the supervisor and the re-armer on the head, and in the CLI.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jobs.head.clock import REAL, Clock
from jobs.head.files import LOCAL, Files

FOLDER = "supervision"
_LEASE = re.compile(r"^lease\.(?P<gen>[0-9]+)$")
# How long a lease file nobody wrote counts as taken, from its creation: the re-armer's hand-off
# lease (jobs/head/rearm.py HANDOFF_S), the longest any taker holds a lease it has not renewed.
UNWRITTEN_TTL_S = 120.0
UNWRITTEN_HOLDER = "?"


@dataclass(frozen=True)
class Lease:
    holder: str
    gen: int
    renewed: float
    ttl_s: float
    # The Ray head session its holder runs on (`GET /api/version` `session_name`): only that
    # head's Ray can say whether the holder lives. None in a lease written before leases had
    # one, or by a taker that could not read its head's.
    head: str | None = None

    def alive(self, now: float) -> bool:
        return now < self.renewed + self.ttl_s

    @property
    def unwritten(self) -> bool:
        """Created with O_EXCL but not (fully) written: its taker is writing it, or died."""
        return self.holder == UNWRITTEN_HOLDER


def runs(root: str | Path, files: Files = LOCAL) -> list[str]:
    """The runs with a record under `root`, by name."""
    base = _root_path(str(root))
    try:
        names = files.listdir(base)
    except OSError:
        return []
    found = []
    for n in names:
        events, spec = _record_files(str(base), n)
        if files.is_file(events) or files.is_file(spec):
            found.append(n)
    return sorted(found)


@functools.lru_cache(maxsize=64)
def _root_path(root: str) -> Path:
    return Path(root)


@functools.lru_cache(maxsize=4096)
def _record_files(root: str, run: str) -> tuple[Path, Path]:
    """A run's record files, built once (the re-armer lists the root every few seconds)."""
    record = Path(root, run, FOLDER)
    return record / "events.jsonl", record / "spec.json"


class RunStore:
    def __init__(
        self, root: str | Path, run: str, clock: Clock = REAL, files: Files = LOCAL
    ) -> None:
        self.run = run
        self.dir = Path(root) / run / FOLDER
        self.clock = clock
        self.files = files
        self._paths: dict[str, Path] = {}
        # events(): how much of the log is parsed, its records, and the text just before that
        # point (a log rewritten under us, not appended to, is read whole again).
        self._parsed: tuple[int, list[dict[str, Any]]] = (0, [])
        self._parsed_tail = ""
        self._lease_read: tuple[tuple[int, str] | None, Lease | None] = (None, None)

    def _path(self, name: str) -> Path:
        """`dir / name`, built once per name: a lease renewal every few seconds for days, and
        the simulation's thousands of schedules, would otherwise spend their time in pathlib."""
        path = self._paths.get(name)
        if path is None:
            path = self._paths[name] = self.dir / name
        return path

    # ------------------------------------------------------------------ record

    def append(self, record: dict[str, Any], encoded: str | None = None) -> None:
        """One record at the end of the log; `encoded`: the record as the caller already
        serialised it (sorted keys), written as is."""
        self.files.makedirs(self.dir)
        data = ((encoded or json.dumps(record, sort_keys=True)) + "\n").encode()
        self.files.append(self._path("events.jsonl"), data)

    def events(self) -> list[dict[str, Any]]:
        """Every record, in order. The log only grows (appends), so the complete lines read
        before are not parsed again: the re-armer reads a run's record at every sweep, a
        record that holds an hourly line through a stockout of days."""
        try:
            text = self.files.read_text(self._path("events.jsonl"))
        except OSError:
            return []
        done, parsed = self._parsed
        if len(text) < done or not text.startswith(
            self._parsed_tail, done - len(self._parsed_tail)
        ):
            done, parsed = 0, []  # rewritten (not by us): read it whole
        complete = text.rfind("\n") + 1
        fresh = list(parsed)
        for raw in text[done:complete].splitlines():
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a line torn when the head was lost
            if isinstance(rec, dict) and "event" in rec:
                fresh.append(rec)
        if complete > done:
            self._parsed, self._parsed_tail = (
                (complete, fresh),
                text[max(0, complete - 64) : complete],
            )
        out = list(fresh)
        for raw in text[complete:].splitlines():  # the line being written, if it parses
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and "event" in rec:
                out.append(rec)
        return out

    def write_spec(self, spec: dict[str, Any], replace: bool = False) -> None:
        """The spec a re-armer hands on; written once per life of the run (`replace`: a new
        hand-off, e.g. `submit --resume`, whose first attempt and settings are the new ones)."""
        if not replace and self.files.is_file(self._path("spec.json")):
            return
        self._write("spec.json", spec)

    def spec(self) -> dict[str, Any] | None:
        try:
            spec: dict[str, Any] = json.loads(self.files.read_text(self._path("spec.json")))
            return spec
        except (OSError, ValueError):
            return None

    def keep_progress(self, submission_id: str, lines: str) -> None:
        """An attempt's step lines (jobs/head/progress.py `progress_lines`), kept beside the
        record so the run's goodput outlives the head whose logs had them."""
        self.files.makedirs(self.dir)
        self.files.write_atomic(self._path(f"progress.{submission_id}.log"), lines)

    def progress(self, submission_id: str) -> str:
        """The attempt's kept step lines; "" when none were kept."""
        try:
            return self.files.read_text(self._path(f"progress.{submission_id}.log"))
        except OSError:
            return ""

    def _write(self, name: str, obj: dict[str, Any]) -> None:
        self.files.makedirs(self.dir)
        self.files.write_atomic(self._path(name), json.dumps(obj))

    # ------------------------------------------------------------------ lease

    def _gens(self) -> list[int]:
        try:
            names = self.files.listdir(self.dir)
        except OSError:
            return []
        return sorted(
            int(m["gen"]) for n in names if n.startswith("lease.") and (m := _LEASE.match(n))
        )

    def lease(self) -> Lease | None:
        """The newest lease, or None when the run never had one."""
        for gen in reversed(self._gens()):
            path = self._path(f"lease.{gen}")
            try:
                text = self.files.read_text(path)
                if self._lease_read[0] == (gen, text):  # read at every sweep and renewal
                    return self._lease_read[1]
                d = json.loads(text)
                head = d.get("head")
                lease = Lease(
                    str(d["holder"]),
                    gen,
                    float(d["renewed"]),
                    float(d["ttl_s"]),
                    head if isinstance(head, str) else None,
                )
                self._lease_read = ((gen, text), lease)
                return lease
            except (OSError, ValueError, KeyError, TypeError):
                # Created with O_EXCL but not (fully) written: taken at its creation, by a
                # taker that may be writing it now or may have died doing so.
                try:
                    created = self.files.mtime(path)
                except OSError:
                    created = self.clock.time()
                return Lease(UNWRITTEN_HOLDER, gen, created, UNWRITTEN_TTL_S)
        return None

    def alive(self, lease: Lease | None) -> bool:
        return lease is not None and lease.alive(self.clock.time())

    def acquire(self, holder: str, ttl_s: float, head: str | None = None) -> Lease | None:
        """The lease for `holder` (on Ray head session `head`): kept if it holds it, taken if it
        is free or expired; None when another holder's lease is alive or another taker won the
        race."""
        current = self.lease()
        if current is not None and current.holder == holder:
            return self.renew(replace(current, head=head or current.head), ttl_s)
        if self.alive(current):
            return None
        gen = (current.gen if current else 0) + 1
        self.files.makedirs(self.dir)
        try:
            self.files.create_exclusive(self._path(f"lease.{gen}"))
        except FileExistsError:
            return None
        lease = Lease(holder, gen, self.clock.time(), ttl_s, head)
        self._write(f"lease.{gen}", self._lease_dict(lease))
        for old in self._gens():
            if old < gen - 1:
                self.files.unlink(self._path(f"lease.{old}"))
        return lease

    def renew(self, lease: Lease, ttl_s: float | None = None) -> Lease | None:
        """Renewed, or None when a newer generation exists: the run was taken over."""
        if max(self._gens(), default=0) > lease.gen:
            return None
        renewed = Lease(
            lease.holder,
            lease.gen,
            self.clock.time(),
            lease.ttl_s if ttl_s is None else ttl_s,
            lease.head,
        )
        self._write(f"lease.{lease.gen}", self._lease_dict(renewed))
        return renewed

    def release(self, lease: Lease) -> None:
        """Give the lease up at once (the run ended): an expired lease nobody renews."""
        if max(self._gens(), default=0) == lease.gen:
            self._write(
                f"lease.{lease.gen}",
                self._lease_dict(Lease(lease.holder, lease.gen, 0.0, 0.0, lease.head)),
            )

    @staticmethod
    def _lease_dict(lease: Lease) -> dict[str, Any]:
        return {
            "holder": lease.holder,
            "gen": lease.gen,
            "renewed": lease.renewed,
            "ttl_s": lease.ttl_s,
            "head": lease.head,
        }
