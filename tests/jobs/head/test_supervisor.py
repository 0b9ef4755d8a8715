"""The supervisor's own small rules: how a supervisor job's metadata becomes a supervisor, and
how an ended attempt's budget is spent.

Its loop is exercised against a real local Ray cluster in tests/jobs/runs/test_handoff.py and
tests/jobs/head/test_survival.py, and in a simulated world in tests/jobs/head/sim.
"""

from __future__ import annotations

from jobs.head import protocol
from jobs.head.probes import Probes
from jobs.head.protocol import Settings, Spec
from jobs.head.restart_policy import Charge
from jobs.head.run_state import RunState
from jobs.head.supervisor import _charge, from_job
from tests.jobs.head.test_protocol import spec


def _metadata(s: Spec, rearmed: bool = False) -> dict[str, str]:
    meta = {Spec.METADATA_KEY: s.to_json()}
    if rearmed:
        meta[protocol.REARMED_KEY] = "1"
    return meta


def _probes() -> Probes:
    return Probes(nodes=list, log_size=lambda _job_id: 0)


def test_from_job_takes_its_own_working_dir_and_whether_it_was_rearmed():
    sup = from_job(None, "r-s1", _metadata(spec()), _probes(), Settings(), working_dir="gcs://new")
    assert sup.spec.runtime_env["working_dir"] == "gcs://new"
    assert not sup.rearmed
    assert sup.current is None
    again = from_job(None, "r-s2", _metadata(spec(), rearmed=True), _probes(), Settings())
    assert again.rearmed
    assert again.spec.runtime_env["working_dir"] == "gcs://_ray_pkg_x.zip"


def test_a_spec_without_a_working_dir_gets_none_from_the_job():
    plain = spec(runtime_env={})
    sup = from_job(None, "r-s1", _metadata(plain), _probes(), Settings(), working_dir="gcs://new")
    assert "working_dir" not in sup.spec.runtime_env


def test_a_restart_sets_the_crash_baseline_a_stall_or_a_preemption_does_not():
    ended = frozenset({"step_10"})
    state = RunState(attempt=1, end_entries=ended, own_progress=True)
    _charge(state, Charge.STALL_RESTART)
    assert (state.restarts, state.preemptions, state.has_baseline) == (1, 0, False)
    assert state.charged
    _charge(state, Charge.PREEMPTION)
    assert (state.restarts, state.preemptions, state.has_baseline) == (1, 1, False)
    _charge(state, Charge.RESTART)
    assert (state.restarts, state.baseline, state.prev_progressed) == (2, ended, True)
    assert state.has_baseline
