"""The executor's compile gate: compiles and test boxes run side by side, and a compile tried
again after the scratch disk had no room runs alone.

Compiles share the executor's scratch disk. When one fails for want of room, the cause may be
its siblings' binaries being written at that moment: tried again at once beside the same siblings
(also trying again), an honest solution met the same full disk three times under load (CI,
2026-12-06, `test_a_full_scratch_disk_is_a_fault_that_harms_no_sibling`). Alone, it fails again
only if the disk has no room for its own binary: the sandbox's fault, told as such. Test boxes
write their inputs to the same disk, so they hold the gate too: a sibling's tests running beside
a big binary's retry lost a case to the full disk (scored 0.5, CI 2026-12-06).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class CompileGate:
    """Many `shared` holders at once, or one `exclusive` holder. A waiting `exclusive` holder
    keeps new `shared` ones out, so a retry is not starved by a stream of new compiles."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._exclusive_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._exclusive_waiting)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self, give_up: Callable[[], bool], poll_s: float = 0.1) -> Iterator[bool]:
        """Alone once every other holder has left; yields False (holding nothing) if `give_up()`
        turns true first."""
        got = False
        with self._cond:
            self._exclusive_waiting += 1
            try:
                while self._shared or self._exclusive:
                    if give_up():
                        break
                    self._cond.wait(poll_s)
                else:
                    self._exclusive = got = True
            finally:
                self._exclusive_waiting -= 1
                self._cond.notify_all()
        try:
            yield got
        finally:
            if got:
                with self._cond:
                    self._exclusive = False
                    self._cond.notify_all()
