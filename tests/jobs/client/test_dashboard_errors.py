"""How Ray client errors become the CLI's errors: duplicates, unknown jobs, a lost dashboard."""

from __future__ import annotations

import aiohttp
import pytest
import requests

from jobs.client.dashboard import AlreadySubmitted, _translated, meaningful_line
from jobs.common.errors import ExitCode, JobsError, NotFound, Unreachable

# What Ray 2.60's dashboard answers to a duplicate submission id: HTTP 500 with the traceback
# (job_head.py returns traceback.format_exc()), wrapped by dashboard_sdk._raise_error.
DUPLICATE_500 = (
    "Request failed with status code 500: Traceback (most recent call last):\n"
    '  File ".../job_head.py", line 373, in submit_job\n'
    "    submission_id = await self._job_manager.submit_job(\n"
    "ValueError: Job with submission_id {id} already exists. Please use a different "
    "submission_id.."
)


def translate(exc: BaseException) -> JobsError:
    with pytest.raises(JobsError) as e, _translated("submit x"):
        raise exc
    return e.value


@pytest.mark.parametrize(
    "job_id", ["run-404-a1", "r-20261130-040404-a2", "e404c0de-a1", "plain-a1"]
)
def test_a_duplicate_is_already_submitted_even_when_its_id_contains_404(job_id):
    err = translate(RuntimeError(DUPLICATE_500.format(id=job_id)))
    assert isinstance(err, AlreadySubmitted)


def test_an_unknown_job_is_a_usage_error_only_for_status_404():
    err = translate(RuntimeError("Request failed with status code 404: Job x-a1 does not exist."))
    assert type(err) is NotFound and err.message.startswith("no such job")
    other = translate(RuntimeError("Request failed with status code 400: bad id 404-ish."))
    assert type(other) is JobsError and "404-ish" in other.message


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("WebSocket connection closed unexpectedly with close code 1006"),
        RuntimeError("WebSocket error for job x-a1: Cannot write to closing transport"),
        RuntimeError("Request failed with status code 502: Bad Gateway."),
        aiohttp.ClientConnectionError("Connection reset by peer"),
        aiohttp.ServerDisconnectedError(),
        requests.exceptions.ReadTimeout("read timed out"),
        requests.exceptions.ChunkedEncodingError("broken"),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
)
def test_losing_the_dashboard_is_unreachable_exit_3(exc):
    err = translate(exc)
    assert isinstance(err, Unreachable) and err.code == ExitCode.UNREACHABLE
    assert err.message.startswith("lost the Ray dashboard while trying to submit x")


def test_a_500_shows_the_exception_line_not_the_traceback_header():
    err = translate(
        RuntimeError(
            "Request failed with status code 500: Traceback (most recent call last):\n"
            '  File "x.py", line 1\nValueError: runtime_env field "pip" is invalid.'
        )
    )
    assert "Traceback" not in err.line()
    assert err.message == (
        'Ray refused to submit x: status code 500: ValueError: runtime_env field "pip" is invalid'
    )
    assert meaningful_line(
        "Request failed with status code 413: Maximum request body size 104857600 exceeded."
    ) == ("Request failed with status code 413: Maximum request body size 104857600 exceeded.")


class _LogAPI:
    """The three Jobs API calls a log read makes, answering as Ray does for a driver whose node
    is `state` (job_head.py `get_job_logs` answers 500 with the agent's traceback)."""

    def __init__(self, state: str | None, driver: str | None = "n" * 56) -> None:
        self.state, self.driver = state, driver

    def get_job_logs(self, job_id: str) -> str:
        from jobs.client.api import JobsAPIError

        raise JobsAPIError(
            500,
            'Traceback (most recent call last):\n  File "job_head.py", in get_job_logs\n'
            "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 127.0.0.1:52365\n",
        )

    def get_job_info(self, job_id: str):
        from types import SimpleNamespace

        return SimpleNamespace(driver_node_id=self.driver)

    def list_nodes(self):
        return [] if self.state is None else [{"node_id": "n" * 56, "state": self.state}]


def _read(api: _LogAPI) -> JobsError:
    from jobs.client.dashboard import Dashboard

    cluster = Dashboard("http://127.0.0.1:1")
    cluster.api = api  # type: ignore[assignment]
    with pytest.raises(JobsError) as e:
        cluster.logs("r-a1")
    return e.value


@pytest.mark.parametrize("state", ["DEAD", None])
def test_a_log_whose_driver_node_is_gone_is_lost_with_it(state):
    from jobs.client.dashboard import LogLost

    err = _read(_LogAPI(state))
    assert isinstance(err, LogLost)
    assert err.message.startswith("the log of r-a1 was lost with its node nnnnnnnnnnnn")


def test_a_log_whose_node_is_alive_is_unreadable_not_lost_and_says_why():
    from jobs.client.dashboard import LogLost, LogUnreadable

    err = _read(_LogAPI("ALIVE"))
    assert isinstance(err, LogUnreadable) and not isinstance(err, LogLost)
    assert err.message == (
        "Ray could not read the log of r-a1 from its driver's node: "
        "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 127.0.0.1:52365"
    )
