"""The re-armer's choice of runs: supervised, unfinished, lease lapsed; never twice."""

from __future__ import annotations

import time

import pytest

from jobs.head import events as ev
from jobs.head.rearm import Rearmer
from jobs.head.run_store import RunStore


class _Client:
    def __init__(self) -> None:
        self.submitted: list[dict] = []

    def list_jobs(self) -> list:
        return []

    def submit_job(self, **kw) -> str:
        self.submitted.append(kw)
        return kw["submission_id"]


def _run(root, run, ttl, final=False):
    store = RunStore(root, run)
    store.acquire(f"{run}-s1", ttl_s=ttl)
    store.write_spec({"run": run, "max_restarts": 1})
    store.append(ev.record(ev.SUBMITTED, run, "submitted", supervisor=f"{run}-s1"))
    if final:
        store.append(ev.record(ev.FINISHED, run, "done"))


def test_only_unfinished_runs_with_a_lapsed_lease_are_re_armed_once(tmp_path):
    _run(tmp_path, "lapsed", ttl=0.05)
    _run(tmp_path, "alive", ttl=60)
    _run(tmp_path, "done", ttl=0.05, final=True)
    time.sleep(0.1)
    client = _Client()
    first, second = (
        Rearmer(client, str(tmp_path), write=lambda _: None),
        Rearmer(client, str(tmp_path), write=lambda _: None),
    )
    assert first.sweep() == ["lapsed-s2"]
    assert second.sweep() == []  # the new supervisor's lease is taken in its name
    [sub] = client.submitted
    assert sub["entrypoint"] == "python -m jobs.head.supervisor lapsed-s2"
    assert sub["metadata"]["kind"] == "supervisor" and sub["metadata"]["run"] == "lapsed"
    assert RunStore(tmp_path, "lapsed").lease().holder == "lapsed-s2"
    assert RunStore(tmp_path, "lapsed").events()[-1]["event"] == ev.REARMED


def test_the_rearmer_writes_the_same_supervisor_metadata_as_the_cli_plus_rearmed(tmp_path):
    """One metadata writer: a re-armed supervisor's job carries the keys a handed-off
    one does (list/status read them), and says it was re-armed (a continued life)."""
    from jobs.head import protocol

    _run(tmp_path, "lapsed", ttl=0.01)
    time.sleep(0.05)
    client = _Client()
    Rearmer(client, str(tmp_path), write=lambda _: None).sweep()
    [sub] = client.submitted
    handed = protocol.supervisor_metadata({"run": "lapsed", "max_restarts": 1}, 1, "rl-jobs")
    assert set(sub["metadata"]) == set(handed) | {protocol.REARMED_KEY}
    assert sub["metadata"]["max_restarts"] == "1"


def test_a_stopped_run_whose_supervisor_died_first_gets_its_stop_job_again(tmp_path):
    """Found by the on-demand simulation: the stop came while the dead supervisor's
    lease was still held, so the stop job left the end to it; once the lease lapses the
    re-armer submits the stop job again, which writes the end and drops the GPU request."""
    from jobs.head import protocol, stop

    _run(tmp_path, "stopped", ttl=0.05)
    stop.request_stop(RunStore(tmp_path, "stopped"), "rl-jobs stop")
    time.sleep(0.1)
    client = _Client()
    rearmer = Rearmer(client, str(tmp_path), write=lambda _: None)
    assert rearmer.sweep() == []  # never re-armed: its stop was asked
    [sub] = client.submitted
    assert sub["submission_id"] == "stopped-stop1"
    assert sub["metadata"]["kind"] == protocol.STOP
    assert sub["entrypoint"] == (
        f"python -m jobs.head.stop stopped --runs-root {tmp_path} --by re-armer"
    )
    # What that job does: the end on the record (the request is not written twice).
    store = RunStore(tmp_path, "stopped")
    dropped: list[str] = []
    stop.record_stop(store, "re-armer", dropped.append)
    kinds = [r["event"] for r in store.events()]
    assert kinds.count(ev.STOP_REQUESTED) == 1 and ev.outcome(store.events())["event"] == ev.STOPPED
    assert dropped == []  # this run's spec asked for no GPUs on request
    assert Rearmer(_Client(), str(tmp_path), write=lambda _: None).unended_stops() == []


@pytest.mark.subprocess_cli
def test_ctrl_c_ends_the_rearmer_with_one_line_and_no_traceback(tmp_path):
    """Trying the re-armer in a terminal, Ctrl-C printed a Python traceback."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "jobs.head.rearm", "--address", "http://127.0.0.1:9",
         "--runs-root", str(tmp_path), "--interval", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the first sweep has run (the address refuses)
        assert first.startswith("rearm: "), first
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, rest  # once in a loaded CI run it was 1: what it printed
    assert "Traceback" not in rest and rest.startswith("rearm: interrupted"), rest


def test_a_lapsed_lease_of_another_head_is_left_to_that_heads_rearmer_for_a_while(tmp_path):
    """Two heads on one runs root: a supervisor on head A killed, A still up with the run's
    attempt running. Only A's Ray knows that attempt: A's re-armer adopts it, while a supervisor
    re-armed on B would take it for lost with the head (404) and start the next beside it. So B's
    re-armer leaves such a run for OTHER_HEAD_GRACE_S after the lease lapsed (A's re-armer sweeps
    every 10 s), and takes it after (head A was lost)."""
    from jobs.head.clock import Clock
    from jobs.head.rearm import OTHER_HEAD_GRACE_S

    class _At(Clock):
        def __init__(self) -> None:
            self.now = 1000.0

        def time(self) -> float:
            return self.now

        def monotonic(self) -> float:
            return self.now

    clock = _At()
    for run, head in (("ours", "session_b"), ("theirs", "session_a"), ("old", None)):
        store = RunStore(tmp_path, run, clock)
        store.acquire(f"{run}-s1", ttl_s=15, head=head)
        store.write_spec({"run": run, "max_restarts": 1})
    clock.now += 16  # every lease lapsed a second ago
    on_b = Rearmer(_Client(), str(tmp_path), write=lambda _: None, clock=clock, head="session_b")
    on_a = Rearmer(_Client(), str(tmp_path), write=lambda _: None, clock=clock, head="session_a")
    assert on_b.candidates() == ["old", "ours"]
    assert on_a.candidates() == ["old", "theirs"]
    clock.now += OTHER_HEAD_GRACE_S
    assert on_b.candidates() == ["old", "ours", "theirs"]


def test_the_grace_for_another_heads_lease_is_the_one_the_rearmer_was_started_with(tmp_path):
    """`--other-head-grace` (a shorter grace where heads restart faster, or in the tests):
    another head's lapsed lease is taken once that grace is over, not the default's."""
    from jobs.head.clock import Clock

    class _At(Clock):
        now = 1000.0

        def time(self) -> float:
            return self.now

        def monotonic(self) -> float:
            return self.now

    clock = _At()
    store = RunStore(tmp_path, "theirs", clock)
    store.acquire("theirs-s1", ttl_s=15, head="session_a")
    store.write_spec({"run": "theirs", "max_restarts": 1})
    on_b = Rearmer(
        _Client(),
        str(tmp_path),
        write=lambda _: None,
        clock=clock,
        head="session_b",
        other_head_grace_s=5.0,
    )
    clock.now += 15 + 4.9
    assert on_b.candidates() == []
    clock.now += 0.2
    assert on_b.candidates() == ["theirs"]


@pytest.mark.parametrize(
    ("given", "said"), [("x", "'x' is not a number of seconds"), ("-5", "give 0 or more seconds")]
)
def test_the_rearmer_refuses_a_grace_that_is_not_zero_or_more_seconds(capsys, given, said):
    """A negative grace would take another head's lease while it still lives."""
    from jobs.head.rearm import main

    with pytest.raises(SystemExit) as ended:
        main(
            ["--address", "http://127.0.0.1:1", "--runs-root", "/tmp", "--other-head-grace", given]
        )
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "--other-head-grace" in err and said in err, err
