"""Failed Jobs API calls are sorted by HTTP status, from our client and from Ray's alike."""

from __future__ import annotations

import http.client

import requests

from jobs.client import errors
from jobs.client.api import JobsAPIError

DUPLICATE = (
    "Traceback (most recent call last):\nValueError: Job with submission_id r-a2 "
    "already exists. Please use a different submission_id."
)


def test_only_a_missing_dashboard_is_retried_never_a_refusal():
    assert errors.is_transient(requests.exceptions.ConnectionError("refused"))
    assert errors.is_transient(ConnectionRefusedError(111, "refused"))
    assert errors.is_transient(http.client.RemoteDisconnected("gone"))
    assert errors.is_transient(JobsAPIError(503, "unavailable"))
    assert errors.is_transient(RuntimeError("Request failed with status code 504: timeout"))
    # A refused runtime env or a bad request would fail the same way forever.
    assert not errors.is_transient(JobsAPIError(400, "bad runtime_env"))
    assert not errors.is_transient(JobsAPIError(500, DUPLICATE))


def test_the_status_is_read_from_the_error_not_from_words_in_its_body():
    # A body that mentions another status (an id with 404 in it) does not change the verdict.
    assert errors.http_status(JobsAPIError(500, "job run-404-a1: status code 404")) == 500
    assert errors.is_not_found(JobsAPIError(404, "Job x-a1 does not exist."))
    assert not errors.is_not_found(JobsAPIError(400, "bad id 404-ish"))
    assert errors.http_status(RuntimeError("Request failed with status code 404: x")) == 404
    assert errors.http_status(RuntimeError("the body says status code 404")) is None


def test_a_duplicate_is_a_500_that_says_already_exists():
    assert errors.is_duplicate(JobsAPIError(500, DUPLICATE))
    assert errors.is_duplicate(RuntimeError(f"Request failed with status code 500: {DUPLICATE}"))
    assert not errors.is_duplicate(JobsAPIError(400, "already exists"))
    assert not errors.is_duplicate(JobsAPIError(500, "ValueError: runtime_env is invalid"))
