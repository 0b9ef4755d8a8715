"""The supervisor's probes over Ray: an attempt's driver log read from the head's log dir, else
the Jobs API's copy (its size at most every 10 s), and whether a job is still alive."""

from __future__ import annotations

from types import SimpleNamespace

from jobs.client.types import JobStatus
from jobs.head import node_events, progress
from jobs.head.probes import from_ray, job_alive


class LogsAPI:
    """The Jobs API's copy of a driver's log, counting how often it is fetched."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.fetched = 0

    def get_job_logs(self, _job_id: str) -> str:
        self.fetched += 1
        return self.text


def _ctx(session_dir: object) -> SimpleNamespace:
    return SimpleNamespace(address_info={"session_dir": str(session_dir)})


def test_a_driver_log_on_the_head_is_read_from_its_file(tmp_path):
    (tmp_path / "logs").mkdir()
    log = "==== Step 1/9 ====\n==== Step 2/9 ====\n"
    (tmp_path / "logs" / "job-driver-r-a1.log").write_text(log)
    api = LogsAPI("not this")
    probes = from_ray(api, "http://head:8265", _ctx(tmp_path))
    assert probes.log_size("r-a1") == len(log)
    assert probes.steps("r-a1") == 1
    assert probes.progress_lines("r-a1") == progress.progress_lines(log)
    assert api.fetched == 0


def test_a_remote_drivers_log_comes_from_the_jobs_api_its_size_at_most_every_10_s(tmp_path):
    api = LogsAPI("step:1 - actor/loss:0.1\nstep:2 - actor/loss:0.1\n")
    probes = from_ray(api, "http://head:8265", _ctx(tmp_path))
    assert probes.log_size("r-a1") == len(api.text)
    api.text += "more\n"
    assert probes.log_size("r-a1") == len(api.text) - len("more\n")  # cached for 10 s
    assert api.fetched == 1
    assert probes.steps("r-a1") == 1
    assert api.fetched == 2
    assert not probes.stopped_for_node_end("r-a1")


class InfoAPI:
    """A job record as Ray's Jobs API gives it (`GET /api/jobs/{id}`)."""

    def __init__(self, **record: object) -> None:
        self.record = record

    def get_job_info(self, _sid: str) -> SimpleNamespace:
        return SimpleNamespace(**self.record)


def test_the_hosts_of_an_attempt_that_never_called_ray_init_are_its_drivers_node(
    tmp_path, monkeypatch
):
    def state_api(*_args: object) -> frozenset[str]:
        raise AssertionError("no Ray job id to ask Ray's state API about")

    monkeypatch.setattr(node_events, "hosts", state_api)
    api = InfoAPI(job_id=None, driver_node_id="head-node")
    assert from_ray(api, "http://head:8265", _ctx(tmp_path)).hosts("r-a1") == {"head-node"}
    pending = InfoAPI(job_id=None, driver_node_id=None)  # the driver never started
    assert from_ray(pending, "http://head:8265", _ctx(tmp_path)).hosts("r-a1") is None


def test_the_hosts_of_an_attempt_with_a_ray_job_id_are_where_its_actors_and_tasks_ran(
    tmp_path, monkeypatch
):
    asked: list[str] = []

    def state_api(_dashboard: str, ray_job_id: str) -> frozenset[str]:
        asked.append(ray_job_id)
        return frozenset({"gpu-1"})

    monkeypatch.setattr(node_events, "hosts", state_api)
    api = InfoAPI(job_id="02000000", driver_node_id="head-node")
    assert from_ray(api, "http://head:8265", _ctx(tmp_path)).hosts("r-a1") == {"gpu-1"}
    assert asked == ["02000000"]


class StatusAPI:
    def __init__(self, answer: JobStatus | Exception) -> None:
        self.answer = answer

    def get_job_status(self, _sid: str) -> JobStatus:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_only_an_ended_or_unknown_job_is_gone():
    assert job_alive(StatusAPI(JobStatus.RUNNING), "r-s1")
    assert not job_alive(StatusAPI(JobStatus.SUCCEEDED), "r-s1")
    assert not job_alive(StatusAPI(RuntimeError("Request failed with status code 404")), "r-s1")
    assert job_alive(StatusAPI(OSError("connection refused")), "r-s1")  # cannot tell: alive
