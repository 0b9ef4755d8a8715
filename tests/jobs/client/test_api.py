"""The REST client against a real local Ray head, with Ray's own client as the reference, and the
CLI errors its failures become: unknown job, duplicate id, a dashboard that is gone."""

from __future__ import annotations

import contextlib
import http.server
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.client.api import JobsAPI, JobsAPIError
from jobs.client.dashboard import AlreadySubmitted, Dashboard
from jobs.client.types import JobStatus
from jobs.common.errors import ExitCode, NotFound, Unreachable, UsageError
from jobs.runs.plan import Submission
from tests.jobs.conftest import Proxy, clean_env, run_cli, wait_until


def _sid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _wait_terminal(api: JobsAPI, sid: str) -> JobStatus:
    wait_until(lambda: api.get_job_status(sid).is_terminal(), 60, f"{sid} ends")
    return api.get_job_status(sid)


@pytest.mark.ray
def test_a_submitted_job_reads_back_as_rays_client_reads_it(ray_url, ray_client):
    api = JobsAPI(ray_url + "/")  # a trailing slash is dropped, as Ray's client does
    sid = _sid("api")
    got = api.submit_job(
        entrypoint="echo from-the-rest-client",
        submission_id=sid,
        runtime_env={"env_vars": {"X": "1"}},
        metadata={"run": "api"},
        entrypoint_num_cpus=0.1,
    )
    assert got == sid
    assert _wait_terminal(api, sid) == JobStatus.SUCCEEDED
    ours, theirs = api.get_job_info(sid), ray_client.get_job_info(sid)
    for field in (
        "status",
        "entrypoint",
        "submission_id",
        "job_id",
        "metadata",
        "message",
        "start_time",
        "end_time",
        "driver_exit_code",
    ):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.metadata == {"run": "api"}
    assert sid in [j.submission_id for j in api.list_jobs()]
    assert "from-the-rest-client" in api.get_job_logs(sid) == ray_client.get_job_logs(sid)


@pytest.mark.ray
def test_stop_answers_whether_the_job_was_running(ray_url):
    api = JobsAPI(ray_url)
    sid = api.submit_job(entrypoint="sleep 60", submission_id=_sid("stop"))
    wait_until(lambda: api.get_job_status(sid) != JobStatus.PENDING, 60, f"{sid} starts")
    assert api.stop_job(sid) is True
    assert _wait_terminal(api, sid) == JobStatus.STOPPED
    # Ray answers whether the job's supervisor actor is still alive (job_manager.py `stop_job`,
    # Ray 2.60), and that actor outlives the STOPPED status by a moment, longer on a busy machine:
    # a stop of the ended job answers False once the actor is gone.
    wait_until(lambda: api.stop_job(sid) is False, 60, f"a stop of the ended {sid} to answer False")


@pytest.mark.ray
def test_an_unknown_job_is_a_404_and_then_no_such_job(ray_url):
    missing = _sid("nope")
    with pytest.raises(JobsAPIError) as raw:
        JobsAPI(ray_url).get_job_info(missing)
    assert raw.value.status == 404 and missing in raw.value.body
    cluster = Dashboard(ray_url)
    for call in (
        cluster.status,
        cluster.info,
        cluster.logs,
        cluster.stop,
        lambda j: cluster.tail(j, print),
    ):
        with pytest.raises(UsageError) as e:
            call(missing)
        assert type(e.value) is NotFound and e.value.message.startswith("no such job")
        assert e.value.code == ExitCode.USAGE


@pytest.mark.ray
def test_a_duplicate_submission_id_is_already_submitted(ray_url):
    cluster = Dashboard(ray_url)
    sub = Submission(submission_id=_sid("dup-404"), entrypoint="true", runtime_env={}, metadata={})
    assert cluster.submit(sub) == sub.submission_id
    with pytest.raises(AlreadySubmitted) as e:
        cluster.submit(sub)
    assert e.value.message == f"submit {sub.submission_id}: already exists on this cluster"


@pytest.mark.ray
@pytest.mark.subprocess_cli
def test_a_dashboard_that_is_gone_is_unreachable_exit_3(ray_url):
    proxy = Proxy(ray_url)
    cluster = Dashboard(proxy.url)
    assert cluster.jobs()  # through the proxy while it is up
    proxy.stop()
    for call in (
        cluster.jobs,
        lambda: cluster.status("x-a1"),
        lambda: cluster.stop("x-a1"),
        lambda: cluster.tail("x-a1", print),
    ):
        with pytest.raises(Unreachable) as e:
            call()
        assert e.value.code == ExitCode.UNREACHABLE
        assert e.value.message.startswith("lost the Ray dashboard while trying to")
    assert cluster.ray_version() is None
    done = run_cli("list", "--address", proxy.url, env=clean_env(JOBS_RECONNECT_TIMEOUT="0"))
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("error:") and done.stderr.count("\n") == 1


def test_an_unresolvable_host_is_unreachable_not_a_crash():
    with pytest.raises(Unreachable):
        Dashboard("http://no-such-host.invalid:8265").jobs()


@pytest.mark.ray
def test_local_packages_are_uploaded_by_rays_packaging_then_submitted(ray_url, tmp_path: Path):
    (tmp_path / "hello.txt").write_text("packaged-by-ray\n")
    cluster = Dashboard(ray_url)
    env = cluster.upload_working_dir({"working_dir": str(tmp_path), "env_vars": {"A": "b"}})
    assert str(env["working_dir"]).startswith("gcs://") and env["env_vars"] == {"A": "b"}
    sid = cluster.submit(
        Submission(
            submission_id=_sid("wd"),
            entrypoint="cat hello.txt",
            runtime_env={"working_dir": str(tmp_path)},
            metadata={},
        )
    )
    wait_until(lambda: cluster.status(sid).is_terminal(), 90, f"{sid} ends")
    assert cluster.status(sid) == JobStatus.SUCCEEDED
    assert "packaged-by-ray" in cluster.logs(sid)


@contextlib.contextmanager
def _dashboard(answers: list[bytes], seen: list[str | None]) -> Iterator[str]:
    """A loopback stand-in for the dashboard's `GET /api/version`: it answers `answers` in turn
    and keeps each request's User-Agent in `seen`; yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("User-Agent"))
            body = answers.pop(0)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_every_request_names_its_user_agent() -> None:
    """Ray 2.46 and 2.48 (the NeMo RL and veRL images) answer 500 to a request without a
    User-Agent header: the dashboard's middleware reads `req.headers["User-Agent"]`
    (ray/dashboard/optional_utils.py L137 `is_browser_request`, called for every request by
    http_server_head.py L189). http.client sends none unless told."""
    seen: list[str | None] = []
    with _dashboard([b'{"version": "4", "ray_version": "2.46.0"}'], seen) as url:
        JobsAPI(url, timeout_s=5).get_version()
    assert len(seen) == 1 and seen[0] and seen[0].startswith("rl-jobs")


def test_the_heads_session_is_read_from_its_version_and_none_without_one() -> None:
    """The supervisor's lease names its Ray head by the session `GET /api/version` answers; a
    dashboard whose answer has none (or not a string) gives None, not an error."""
    answers = [b'{"version": "4", "session_name": "session_2026_a"}', b'{"version": "4"}']
    with _dashboard(answers, []) as url:
        api = JobsAPI(url, timeout_s=5)
        assert api.session_name() == "session_2026_a"
        assert api.session_name() is None


@pytest.mark.ray
def test_a_real_heads_session_is_its_ray_session(ray_url) -> None:
    name = JobsAPI(ray_url).session_name()
    assert name is not None and name.startswith("session_")
