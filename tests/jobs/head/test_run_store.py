"""The run record on shared storage: append-only events that survive a torn last line, a spec
written once, and a generation-fenced lease (one holder at a time, taken over only expired)."""

from __future__ import annotations

import time

from jobs.head.run_store import RunStore, runs


def test_events_append_in_order_and_a_torn_last_line_is_skipped(tmp_path):
    store = RunStore(tmp_path, "r1")
    store.append({"event": "armed", "n": 1})
    store.append({"event": "submitted", "n": 2})
    with open(store.dir / "events.jsonl", "a") as f:
        f.write('{"event": "attempt_en')  # the head died mid-write
    assert [e["n"] for e in store.events()] == [1, 2]
    assert runs(tmp_path) == ["r1"]
    assert RunStore(tmp_path, "missing").events() == []


def test_the_spec_is_written_once(tmp_path):
    store = RunStore(tmp_path, "r1")
    store.write_spec({"run": "r1", "max_restarts": 1})
    store.write_spec({"run": "r1", "max_restarts": 9})
    assert store.spec() == {"run": "r1", "max_restarts": 1}


def test_one_holder_at_a_time_and_takeover_only_after_expiry(tmp_path):
    a, b = RunStore(tmp_path, "r"), RunStore(tmp_path, "r")
    first = a.acquire("r-s1", ttl_s=0.5)
    assert first is not None and first.gen == 1
    assert b.acquire("r-s2", ttl_s=0.5) is None  # alive: nobody else drives the run
    assert a.acquire("r-s1", ttl_s=0.5).gen == 1  # the holder keeps it
    time.sleep(0.6)
    assert not a.alive(a.lease())
    second = b.acquire("r-s2", ttl_s=5)
    assert second is not None and second.gen == 2
    assert a.renew(first) is None  # fenced: the old holder learns it lost the run
    assert a.lease().holder == "r-s2"


def test_two_takers_of_an_expired_lease_one_wins(tmp_path):
    store = RunStore(tmp_path, "r")
    old = store.acquire("r-s1", ttl_s=0.01)
    time.sleep(0.05)
    # Both saw the same expired generation; the O_EXCL create of the next one decides.
    (store.dir / f"lease.{old.gen + 1}").touch()
    assert store.acquire("r-s3", ttl_s=5) is None


def test_release_expires_the_lease_at_once(tmp_path):
    store = RunStore(tmp_path, "r")
    lease = store.acquire("r-s1", ttl_s=60)
    store.release(lease)
    assert not store.alive(store.lease())


def test_two_takers_racing_for_an_expired_lease_exactly_one_wins(tmp_path):
    """Both takers read the same expired generation before either creates the
    next one (a barrier holds them there); the create of `lease.<gen+1>` with O_EXCL lets one
    win. Without O_EXCL both "took" the run and two supervisors drove it."""
    import threading

    RunStore(tmp_path, "r").acquire("r-s1", ttl_s=0.01)
    time.sleep(0.05)
    both_read = threading.Barrier(2, timeout=10)

    class Racing(RunStore):
        def lease(self):
            seen = super().lease()
            if seen is not None and seen.holder == "r-s1":
                both_read.wait()  # neither creates before both have seen the old lease
            return seen

    won: dict[str, object] = {}

    def take(holder: str) -> None:
        won[holder] = Racing(tmp_path, "r").acquire(holder, ttl_s=60)

    takers = [threading.Thread(target=take, args=(h,)) for h in ("r-s2", "r-s3")]
    for t in takers:
        t.start()
    for t in takers:
        t.join(timeout=20)
    winners = [h for h, lease in won.items() if lease is not None]
    assert len(won) == 2 and len(winners) == 1, won
    assert RunStore(tmp_path, "r").lease().holder == winners[0]


def test_a_store_reading_its_log_again_sees_appends_a_finished_torn_line_and_a_rewrite(tmp_path):
    """events() parses only what was appended since its last read: the result must equal a
    fresh store's whole read after each change (another writer's append, a torn line finished
    later, the log replaced by a shorter one)."""
    reader, writer = RunStore(tmp_path, "r"), RunStore(tmp_path, "r")

    def same() -> list[int]:
        seen = [e["n"] for e in reader.events()]
        assert seen == [e["n"] for e in RunStore(tmp_path, "r").events()]
        return seen

    writer.append({"event": "armed", "n": 1})
    assert same() == [1]
    writer.append({"event": "submitted", "n": 2})
    with open(writer.dir / "events.jsonl", "a") as f:
        f.write('{"event": "attempt_ended", "n": 3')  # being written
    assert same() == [1, 2]
    with open(writer.dir / "events.jsonl", "a") as f:
        f.write("}\n")
    assert same() == [1, 2, 3]
    (writer.dir / "events.jsonl").write_text('{"event": "armed", "n": 9}\n')
    assert same() == [9]
    writer.append({"event": "submitted", "n": 10})
    assert same() == [9, 10]


def test_the_lease_records_its_holders_head_and_an_old_lease_without_one_reads_none(tmp_path):
    import json

    store = RunStore(tmp_path, "r")
    taken = store.acquire("r-s1", ttl_s=60, head="session_a")
    assert taken is not None and taken.head == "session_a"
    assert RunStore(tmp_path, "r").lease().head == "session_a"
    renewed = store.renew(taken)
    assert renewed is not None and renewed.head == "session_a"
    assert RunStore(tmp_path, "r").lease().head == "session_a"
    old = {"holder": "r-s1", "gen": 1, "renewed": time.time(), "ttl_s": 60.0}
    (store.dir / "lease.1").write_text(json.dumps(old))  # written before leases had a head
    read = RunStore(tmp_path, "r").lease()
    assert read is not None and read.holder == "r-s1" and read.head is None
    assert RunStore(tmp_path, "r").alive(read)


def test_a_lapsed_lease_of_another_head_is_taken(tmp_path):
    a, b = RunStore(tmp_path, "r"), RunStore(tmp_path, "r")
    assert a.acquire("r-s1", ttl_s=0.2, head="session_a") is not None
    assert b.acquire("r-s2", ttl_s=5, head="session_b") is None
    time.sleep(0.3)
    taken = b.acquire("r-s2", ttl_s=5, head="session_b")
    assert taken is not None and taken.gen == 2 and taken.head == "session_b"
