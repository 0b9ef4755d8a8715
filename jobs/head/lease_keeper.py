"""The run's lease on the runs root, held by its supervisor: taken once, renewed every third of
its time, and given up when another supervisor took the run.

A supervisor killed outright stops renewing, and its run shows as "unsupervised" once the lease
lapses; the re-armer (jobs/head/rearm.py) then gives the run a new supervisor. The lease itself
(its file, generations and O_EXCL taking) is jobs/head/run_store.py's. Standard library only:
this runs on the Ray head.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from jobs.client import errors
from jobs.client.types import JobStatus
from jobs.head.clock import Clock
from jobs.head.run_store import Lease, RunStore


class LeaseLost(Exception):
    """Another supervisor holds a newer lease on the run."""


@dataclass(eq=False)
class LeaseKeeper:
    """One supervisor's lease on its run; `lost` is set once another supervisor took it."""

    store: RunStore
    own_id: str
    lease_s: float
    clock: Clock
    stopping: threading.Event
    lost: threading.Event
    # Production renews the lease from a thread, so a blocking call cannot let it lapse; the
    # simulation renews it where its simulated time passes (`renew_if_due`).
    in_thread: bool = field(default=True, kw_only=True)
    # This supervisor's Ray head session (`GET /api/version` `session_name`), written into the
    # lease; None when it could not be read (the lease then says nothing of the head).
    head: str | None = field(default=None, kw_only=True)
    lease: Lease | None = field(default=None, init=False)
    _renewed_at: float = field(default=0.0, init=False)

    def take(
        self,
        job_status: Callable[[str], JobStatus | None],
        pause: Callable[[float], bool],
        poll_s: float,
    ) -> bool:
        """Take the lease, or leave `lease` None when another holder keeps it; False when a stop
        came while waiting. A lease whose holder is gone (created but never written, its taker
        killed in between; or a supervisor Ray has already ended) holds the run only until it
        expires: waiting that out beats leaving the run to a re-arm of the previous life's spec
        (found by the simulation, seeds 3696 and 4223: a resume left, and the re-arm gave the
        run up)."""
        self.lease = self.store.acquire(self.own_id, self.lease_s, self.head)
        while self.lease is None and self.holder_gone(self.store.lease(), job_status):
            if pause(poll_s):
                return False
            self.lease = self.store.acquire(self.own_id, self.lease_s, self.head)
        if self.lease is not None:
            self._renewed_at = self.clock.monotonic()
            if self.in_thread:
                threading.Thread(target=self._keep, daemon=True).start()
        return True

    def holder(self) -> str:
        """Who holds the run's lease now."""
        held = self.store.lease()
        return held.holder if held else "another supervisor"

    def holder_gone(
        self, lease: Lease | None, job_status: Callable[[str], JobStatus | None]
    ) -> bool:
        """The lease's holder cannot renew it any more: never written, or a supervisor job
        that Ray has ended (or does not know). A holder on another Ray head is never gone by
        what this head's Ray says: that Ray knows nothing of the other head's jobs (a 404), and
        an ended job of the same id there is an earlier life's. Such a lease holds the run until
        it lapses (two heads on one runs root; seeds 1286 and 3020 of the simulation's sweep
        drove the run from both)."""
        if lease is None:
            return False
        if lease.unwritten:
            return True
        if lease.holder == self.own_id or self.on_another_head(lease):
            return False
        try:
            status = job_status(lease.holder)
        except RuntimeError as e:
            return errors.is_not_found(e)
        except (OSError, ValueError, http.client.HTTPException):
            return False  # cannot tell: the holder keeps the run, as before
        return status is not None and status.is_terminal()

    def on_another_head(self, lease: Lease) -> bool:
        """The lease names a head, and it is not ours. Unknown on either side (a lease written
        before leases had a head, or a head whose session could not be read) reads as one head:
        the rule of one head per runs root, as before."""
        return lease.head is not None and self.head is not None and lease.head != self.head

    def _keep(self) -> None:
        while self.lease is not None:
            if self.stopping.wait(self.lease_s / 3):
                return
            if not self.renew():
                return

    def renew_if_due(self) -> None:
        if self.lease is not None and not self.lost.is_set():
            if self.clock.monotonic() - self._renewed_at >= self.lease_s / 3:
                self.renew()

    def renew(self) -> bool:
        """Renew the lease; False once another supervisor took the run (sets `lost`)."""
        assert self.lease is not None
        try:
            renewed = self.store.renew(self.lease)
        except OSError:
            return True  # Lustre hiccup: the next renewal may make it in time
        if renewed is None:
            self.lost.set()
            return False
        self.lease, self._renewed_at = renewed, self.clock.monotonic()
        return True

    def release(self) -> None:
        """Give the lease back at the end, unless another supervisor holds the run now."""
        if self.lease is not None and not self.lost.is_set():
            self.store.release(self.lease)
