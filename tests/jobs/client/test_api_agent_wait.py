"""A submit sent while the head's job agent is not up yet is sent again, and only that one."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jobs.client.api import NO_AGENT_YET, JobsAPI, JobsAPIError

# The text Ray 2.60's job head answers with a 500 when no agent registered within 10 s
# (ray/dashboard/modules/job/job_head.py `submit_job`).
RAY_NO_AGENT_TEXT = "No available agent to submit job, please try again later."


class Head:
    """A loopback stand-in for the head's POST /api/jobs/: the first `refusals` answers are
    the given (status, text), then the submission is accepted."""

    def __init__(self, refusals: int, status: int = 500, text: str = RAY_NO_AGENT_TEXT) -> None:
        self.refusals, self.status, self.text = refusals, status, text
        self.posts = 0
        # What the head answers after the refusals: by default it takes the submission.
        self.after_refusals: tuple[int, str] | None = None
        head = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                head.posts += 1
                if head.posts <= head.refusals:
                    status, text = head.status, head.text
                elif head.after_refusals is not None:
                    status, text = head.after_refusals
                else:
                    status, text = 200, json.dumps({"submission_id": body.get("submission_id")})
                self.send_response(status)
                self.send_header("Content-Length", str(len(text.encode())))
                self.end_headers()
                self.wfile.write(text.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )


# The resend interval in these tests (1 s in the product: jobs/client/api.py AGENT_RETRY_S); what
# is tested is which answers are sent again and for how long, not the interval.
RETRY_S = 0.05


def _client(head: Head, wait_s: float = 30.0) -> JobsAPI:
    return JobsAPI(head.url, agent_wait_s=wait_s, agent_retry_s=RETRY_S)


@pytest.fixture
def head_factory() -> Iterator[type[Head]]:
    started: list[Head] = []

    def start(*args: object, **kwargs: object) -> Head:
        head = Head(*args, **kwargs)  # type: ignore[arg-type]
        head.thread.start()
        started.append(head)
        return head

    yield start  # type: ignore[misc]
    for head in started:
        head.server.shutdown()
        head.server.server_close()


def test_the_text_we_wait_on_is_the_one_ray_answers() -> None:
    assert RAY_NO_AGENT_TEXT.startswith(NO_AGENT_YET)


def test_a_submit_refused_for_want_of_an_agent_is_sent_again_until_taken(head_factory) -> None:
    head = head_factory(refusals=2)
    job_id = _client(head).submit_job(entrypoint="true", submission_id="r-a1")
    assert job_id == "r-a1"
    assert head.posts == 3


def test_the_wait_for_an_agent_ends_with_rays_error(head_factory) -> None:
    head = head_factory(refusals=1000)
    with pytest.raises(JobsAPIError) as raised:
        _client(head, wait_s=3 * RETRY_S).submit_job(entrypoint="true", submission_id="r-a1")
    assert raised.value.status == 500 and NO_AGENT_YET in raised.value.body
    assert 2 <= head.posts <= 5  # sent RETRY_S apart until the wait is over, then once more


@pytest.mark.parametrize(
    ("status", "text"), [(500, "Failed to submit job: boom"), (400, RAY_NO_AGENT_TEXT)]
)
def test_any_other_refusal_is_raised_at_once(head_factory, status: int, text: str) -> None:
    head = head_factory(refusals=1, status=status, text=text)
    with pytest.raises(JobsAPIError):
        _client(head).submit_job(entrypoint="true", submission_id="r-a1")
    assert head.posts == 1


# What Ray 2.46's job head answers when the node's agent dropped the proxied submit: the end of
# `traceback.format_exc()` in job_head.py `submit_job` (ray-2.46.0 L504-508).
RAY_246_DROPPED_TEXT = (
    "Traceback (most recent call last):\n"
    '  File ".../ray/dashboard/modules/job/job_head.py", line 490, in submit_job\n'
    "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected\n"
)
RAY_ALREADY_EXISTS_TEXT = (
    "ValueError: Job with submission_id r-a1 already exists. Please use a different submission_id."
)


def test_a_submit_the_agent_dropped_is_sent_again_under_its_id(head_factory) -> None:
    head = head_factory(refusals=1, text=RAY_246_DROPPED_TEXT)
    job_id = _client(head).submit_job(entrypoint="true", submission_id="r-a1")
    assert (job_id, head.posts) == ("r-a1", 2)


def test_a_dropped_submit_the_agent_had_made_is_taken_as_made(head_factory) -> None:
    head = head_factory(refusals=1, text=RAY_246_DROPPED_TEXT)
    head.after_refusals = (500, RAY_ALREADY_EXISTS_TEXT)
    job_id = _client(head).submit_job(entrypoint="true", submission_id="r-a1")
    assert (job_id, head.posts) == ("r-a1", 2)


def test_a_submission_id_that_exists_is_still_refused_when_nothing_was_dropped(
    head_factory,
) -> None:
    head = head_factory(refusals=1, text=RAY_ALREADY_EXISTS_TEXT)
    with pytest.raises(JobsAPIError):
        _client(head).submit_job(entrypoint="true", submission_id="r-a1")
    assert head.posts == 1


def test_a_dropped_submit_without_an_id_is_not_sent_twice(head_factory) -> None:
    head = head_factory(refusals=1, text=RAY_246_DROPPED_TEXT)
    with pytest.raises(JobsAPIError):
        _client(head).submit_job(entrypoint="true")
    assert head.posts == 1


# What Ray 2.46's job head answered a submit on a head whose agent was not listening yet (seen
# 2026-12-06 in `make test-image-ray`): the end of the same handler's traceback.
RAY_246_AGENT_NOT_LISTENING_TEXT = (
    "Traceback (most recent call last):\n"
    "ConnectionRefusedError: [Errno 111] Connect call failed ('192.0.2.2', 58005)\n"
    "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host 192.0.2.2:58005 "
    "ssl:default [Connect call failed ('192.0.2.2', 58005)]\n"
)


def test_a_submit_to_an_agent_not_listening_yet_is_sent_again_until_taken(head_factory) -> None:
    head = head_factory(refusals=2, text=RAY_246_AGENT_NOT_LISTENING_TEXT)
    job_id = _client(head).submit_job(entrypoint="true", submission_id="r-a1")
    assert (job_id, head.posts) == ("r-a1", 3)
