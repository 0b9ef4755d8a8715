"""How a supervisor ends: a SIGTERM is the user's stop only when the record says so (or there is
no record to re-arm from), the user's stop stops the live attempt, and any other SIGTERM leaves
the run to the re-armer."""

from __future__ import annotations

import json
from types import SimpleNamespace

from jobs.client.types import JobStatus
from jobs.head import events as ev
from jobs.head import run_end
from jobs.head.probes import Probes
from jobs.head.protocol import Settings, Spec
from jobs.head.run_state import RunState
from jobs.head.supervisor import Supervisor, from_job
from tests.jobs.head.test_protocol import spec


class AttemptAPI:
    def __init__(self, status: JobStatus) -> None:
        self.status = status
        self.stopped: list[str] = []

    def get_job_status(self, _sid: str) -> JobStatus:
        return self.status

    def stop_job(self, sid: str) -> None:
        self.stopped.append(sid)


def _supervisor(client: object, runs_root: str = "") -> tuple[Supervisor, list[dict]]:
    lines: list[dict] = []
    meta = {Spec.METADATA_KEY: spec(runs_root=runs_root).to_json()}
    sup = from_job(
        client,
        "r-s1",
        meta,
        Probes(nodes=list, log_size=lambda _j: 0),
        Settings(),
        write=lambda line: lines.append(json.loads(line.removeprefix(ev.PREFIX))),
    )
    return sup, lines


def test_without_a_record_any_sigterm_is_the_users_stop_and_stops_the_attempt():
    api = AttemptAPI(JobStatus.RUNNING)
    sup, lines = _supervisor(api)
    assert run_end.user_stop(sup)
    assert run_end.stopped(sup, RunState(attempt=2, current="r-a2")) == 0
    assert api.stopped == ["r-a2"]
    assert lines[-1]["event"] == ev.STOPPED and "r-a2 stopped" in lines[-1]["message"]


def test_an_ended_attempt_is_not_stopped_again():
    api = AttemptAPI(JobStatus.FAILED)
    sup, lines = _supervisor(api)
    run_end.stopped(sup, RunState(attempt=2, current="r-a2"))
    assert api.stopped == []
    assert lines[-1]["event"] == ev.STOPPED


def test_a_sigterm_without_a_stop_request_leaves_the_run_to_the_re_armer(tmp_path):
    api = AttemptAPI(JobStatus.RUNNING)
    sup, lines = _supervisor(api, runs_root=str(tmp_path))
    assert not run_end.user_stop(sup)
    run_end.stopped(sup, RunState(attempt=2, current="r-a2"))
    assert api.stopped == []
    assert lines[-1]["event"] == ev.INTERRUPTED and lines[-1]["submission_id"] == "r-a2"


def test_a_lost_lease_and_a_finished_run_are_recorded_as_the_last_word():
    sup, lines = _supervisor(SimpleNamespace())
    assert run_end.left(sup) == 0
    assert lines[-1]["event"] == ev.LEFT and lines[-1]["reason"] == "lease_lost"
    assert run_end.ended(sup, ev.FINISHED, "run r succeeded", reason="succeeded") == 0
    assert lines[-1]["event"] == ev.FINISHED


def test_a_users_stop_keeps_the_attempts_step_lines_as_they_were_at_the_stop(tmp_path):
    """After `stop` at step 29 the runs root said step 6 (the lines kept at the
    watch's last reread, up to 30 s old) and no progress of the stopped attempt was kept."""
    from jobs.head import stop as stop_job
    from jobs.head.run_store import RunStore

    api = AttemptAPI(JobStatus.RUNNING)
    sup, _ = _supervisor(api, runs_root=str(tmp_path))
    store = RunStore(str(tmp_path), "r")
    store.write_spec({"run": "r"})
    stop_job.request_stop(store, "rl-jobs stop")
    sup.store = store
    log = "".join(f"step:{n} - critic/score/mean:0.5\n" for n in range(1, 30))
    sup.probes.progress_lines = lambda _job_id: log
    store.keep_progress("r-a2", "step:6 - critic/score/mean:0.5\n")  # the last reread's
    run_end.stopped(sup, RunState(attempt=2, current="r-a2"))
    assert api.stopped == ["r-a2"]
    assert store.progress("r-a2").splitlines()[-1].startswith("step:29 ")


def test_a_sigterm_without_a_stop_keeps_the_attempts_step_lines_for_the_re_armer(tmp_path):
    from jobs.head.run_store import RunStore

    sup, lines = _supervisor(AttemptAPI(JobStatus.RUNNING), runs_root=str(tmp_path))
    store = RunStore(str(tmp_path), "r")
    sup.store = store
    sup.probes.progress_lines = lambda _job_id: "step:12 - critic/score/mean:0.5\n"
    run_end.stopped(sup, RunState(attempt=1, current="r-a1"))
    assert lines[-1]["event"] == ev.INTERRUPTED
    assert store.progress("r-a1").startswith("step:12 ")
