"""A supervisor's lease on its run: taken, waited for while its holder is gone, renewed when due,
lost to a newer generation, and released at the end unless lost."""

from __future__ import annotations

import threading

from jobs.client.types import JobStatus
from jobs.head.files import LOCAL
from jobs.head.lease_keeper import LeaseKeeper
from jobs.head.run_store import RunStore
from tests.jobs.head.step_clock import StepClock


def _keeper(tmp_path, own_id: str, clock: StepClock, head: str | None = None) -> LeaseKeeper:
    store = RunStore(str(tmp_path), "r", clock, LOCAL)
    return LeaseKeeper(
        store,
        own_id,
        15.0,
        clock,
        threading.Event(),
        threading.Event(),
        in_thread=False,
        head=head,
    )


def _never_asked(_sid: str) -> JobStatus | None:
    raise AssertionError("Ray is not asked about a live holder's job")


def test_a_free_run_is_taken_and_renewed_every_third_of_the_lease(tmp_path):
    clock = StepClock()
    keeper = _keeper(tmp_path, "r-s1", clock)
    assert keeper.take(_never_asked, lambda _s: False, 1.0)
    assert keeper.lease is not None and keeper.lease.holder == "r-s1"
    taken = keeper.lease.renewed
    clock.now += 4.0
    keeper.renew_if_due()
    assert keeper.lease.renewed == taken  # not due yet
    clock.now += 1.0
    keeper.renew_if_due()
    assert keeper.lease.renewed == clock.now


def test_a_live_holders_run_is_left_and_a_newer_generation_takes_it_from_us(tmp_path):
    clock = StepClock()
    first, second = _keeper(tmp_path, "r-s1", clock), _keeper(tmp_path, "r-s2", clock)
    assert first.take(_never_asked, lambda _s: False, 1.0)
    assert second.take(lambda _sid: JobStatus.RUNNING, lambda _s: False, 1.0)
    assert second.lease is None and second.holder() == "r-s1"
    clock.now += 16.0  # r-s1's lease lapsed: r-s2 takes the next generation
    assert second.take(_never_asked, lambda _s: False, 1.0)
    assert not first.renew() and first.lost.is_set()
    first.release()  # lost: nothing to give back
    assert second.store.lease() == second.lease
    second.release()
    assert not second.store.alive(second.store.lease())


def test_the_lease_of_a_holder_ray_has_ended_is_waited_out(tmp_path):
    clock = StepClock()
    first, second = _keeper(tmp_path, "r-s1", clock), _keeper(tmp_path, "r-s2", clock)
    assert first.take(_never_asked, lambda _s: False, 1.0)
    pauses: list[float] = []

    def pause(seconds: float) -> bool:
        pauses.append(seconds)
        return clock.wait(threading.Event(), seconds)

    assert second.take(lambda _sid: JobStatus.FAILED, pause, 1.0)
    assert second.lease is not None and second.lease.holder == "r-s2"
    assert len(pauses) == 15  # until r-s1's 15 s lapsed


def test_a_stop_while_waiting_out_a_gone_holder_gives_up_taking(tmp_path):
    clock = StepClock()
    first, second = _keeper(tmp_path, "r-s1", clock), _keeper(tmp_path, "r-s2", clock)
    assert first.take(_never_asked, lambda _s: False, 1.0)
    assert not second.take(lambda _sid: JobStatus.FAILED, lambda _s: True, 1.0)
    assert second.lease is None


def test_a_holder_is_gone_when_unwritten_ended_or_unknown_and_kept_when_ray_cannot_say(tmp_path):
    from jobs.head.run_store import UNWRITTEN_HOLDER, Lease

    keeper = _keeper(tmp_path, "r-s2", StepClock())
    other = Lease("r-s1", 1, 1000.0, 15.0)

    def raises(e: Exception):
        def status(_sid: str) -> JobStatus | None:
            raise e

        return status

    assert not keeper.holder_gone(None, _never_asked)
    assert keeper.holder_gone(Lease(UNWRITTEN_HOLDER, 1, 1000.0, 15.0), _never_asked)
    assert not keeper.holder_gone(Lease("r-s2", 1, 1000.0, 15.0), _never_asked)
    assert keeper.holder_gone(other, lambda _sid: JobStatus.SUCCEEDED)
    assert not keeper.holder_gone(other, lambda _sid: JobStatus.RUNNING)
    assert not keeper.holder_gone(other, lambda _sid: None)  # a stop came meanwhile
    assert keeper.holder_gone(other, raises(RuntimeError("Request failed with status code 404")))
    assert not keeper.holder_gone(other, raises(RuntimeError("Request failed, code 400")))
    assert not keeper.holder_gone(other, raises(OSError("connection refused")))


def _not_found(_sid: str) -> JobStatus | None:
    raise RuntimeError("Request failed with status code 404: Job r-s1 does not exist.")


def test_a_holder_this_heads_ray_does_not_know_is_gone_when_it_holds_from_this_head(tmp_path):
    from jobs.head.run_store import Lease

    keeper = _keeper(tmp_path, "r-s2", StepClock(), head="session_a")
    assert keeper.holder_gone(Lease("r-s1", 1, 1000.0, 15.0, "session_a"), _not_found)
    assert keeper.holder_gone(
        Lease("r-s1", 1, 1000.0, 15.0, "session_a"), lambda _sid: JobStatus.FAILED
    )


def test_a_holder_on_another_head_is_never_gone_by_what_this_heads_ray_says(tmp_path):
    """Two heads on one runs root: this head's Ray knows nothing of the other's jobs, so its
    404 (or an ended job of the same id, from an earlier life) says nothing of the holder."""
    from jobs.head.run_store import Lease

    keeper = _keeper(tmp_path, "r-s2", StepClock(), head="session_b")
    other = Lease("r-s1", 1, 1000.0, 15.0, "session_a")
    assert not keeper.holder_gone(other, _not_found)
    assert not keeper.holder_gone(other, lambda _sid: JobStatus.FAILED)


def test_a_lease_written_before_leases_had_a_head_keeps_the_rule_of_one_head(tmp_path):
    from jobs.head.run_store import Lease

    keeper = _keeper(tmp_path, "r-s2", StepClock(), head="session_b")
    assert keeper.holder_gone(Lease("r-s1", 1, 1000.0, 15.0), _not_found)
    unknown_here = _keeper(tmp_path, "r-s3", StepClock())  # this head's session unread
    assert unknown_here.holder_gone(Lease("r-s1", 1, 1000.0, 15.0, "session_a"), _not_found)


def test_a_resume_on_a_new_head_leaves_the_old_heads_run_and_takes_it_once_lapsed(tmp_path):
    clock = StepClock()
    old = _keeper(tmp_path, "r-s1", clock, head="session_a")
    assert old.take(_never_asked, lambda _s: False, 1.0)
    assert old.store.lease() is not None and old.store.lease().head == "session_a"
    new = _keeper(tmp_path, "r-s2", clock, head="session_b")
    assert new.take(_not_found, lambda _s: False, 1.0)
    assert new.lease is None and new.holder() == "r-s1"  # left to the other head's holder
    clock.now += 16.0  # session_a's head was lost: its lease lapsed
    assert new.take(_never_asked, lambda _s: False, 1.0)
    assert new.lease is not None and new.lease.head == "session_b"
