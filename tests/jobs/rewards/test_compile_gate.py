"""The compile gate: compiles side by side, a retry after a full disk alone, never starved, and
given up at its run's deadline (jobs/rewards/compile_gate.py)."""

from __future__ import annotations

import threading
import time

import pytest

from jobs.rewards.compile_gate import CompileGate

pytestmark = (
    pytest.mark.compiler
)  # its folder's seam (tests/conftest.py), though it compiles nothing


def _hold_shared(gate: CompileGate, entered: threading.Event, leave: threading.Event) -> None:
    with gate.shared():
        entered.set()
        leave.wait(10)


def _holding(gate: CompileGate) -> tuple[threading.Thread, threading.Event]:
    """A compile in flight: a thread inside `gate.shared()` until the returned event is set."""
    entered, leave = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_shared, args=(gate, entered, leave), daemon=True)
    holder.start()
    assert entered.wait(5)
    return holder, leave


def test_shared_holders_are_in_at_once():
    gate = CompileGate()
    entered = [threading.Event(), threading.Event()]
    leave = threading.Event()
    threads = [
        threading.Thread(target=_hold_shared, args=(gate, e, leave), daemon=True) for e in entered
    ]
    for t in threads:
        t.start()
    try:
        assert all(e.wait(5) for e in entered)
    finally:
        leave.set()
        for t in threads:
            t.join(5)


def test_an_exclusive_holder_waits_for_every_shared_one_and_keeps_new_ones_out():
    gate = CompileGate()
    first, leave_first = _holding(gate)
    alone = threading.Event()
    leave_alone = threading.Event()

    def retry() -> None:
        with gate.exclusive(lambda: False) as got:
            assert got
            alone.set()
            leave_alone.wait(10)

    retrier = threading.Thread(target=retry, daemon=True)
    retrier.start()
    late_in, leave_late = threading.Event(), threading.Event()
    late = threading.Thread(target=_hold_shared, args=(gate, late_in, leave_late), daemon=True)
    time.sleep(0.3)  # the retry is waiting now
    late.start()
    try:
        assert not alone.wait(0.5), "the retry ran beside a compile in flight"
        assert not late_in.wait(0.3), "a new compile started ahead of the waiting retry"
        leave_first.set()
        assert alone.wait(5)
        assert not late_in.wait(0.3), "a new compile started beside the retry"
        leave_alone.set()
        assert late_in.wait(5)
    finally:
        leave_first.set()
        leave_alone.set()
        leave_late.set()
        for t in (first, retrier, late):
            t.join(5)


def test_a_retry_gives_up_holding_nothing_when_its_run_does():
    gate = CompileGate()
    holder, leave = _holding(gate)
    deadline = time.monotonic() + 0.3
    try:
        with gate.exclusive(lambda: time.monotonic() > deadline, poll_s=0.05) as got:
            assert not got
        # It left nothing behind: another compile still gets in while the first holds on.
        other_in, other_leave = threading.Event(), threading.Event()
        other = threading.Thread(target=_hold_shared, args=(gate, other_in, other_leave))
        other.start()
        assert other_in.wait(5)
        other_leave.set()
        other.join(5)
    finally:
        leave.set()
        holder.join(5)
