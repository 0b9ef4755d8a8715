"""How a failed Jobs API call is classified: by its HTTP status, or by having had no answer at all.

Standard library only: the supervisor on the Ray head classifies with the same rules as the CLI.
Our client (jobs/client/api.py) raises `JobsAPIError` carrying the status. Ray's own client, used
only to upload working dirs, raises RuntimeError("Request failed with status code N: body.")
(ray/dashboard/modules/dashboard_sdk.py `_raise_error`, Ray 2.60): its status is read from that
one documented prefix, and nothing else of the text is matched except where Ray gives no status.
"""

from __future__ import annotations

import http.client
import re

from jobs.client.api import ALREADY_EXISTS, JobsAPIError

_RAY_STATUS = re.compile(r"^Request failed with status code (?P<code>[0-9]{3})\b")
# Gateway answers mean a proxy (kubectl port-forward, a load balancer) lost the dashboard.
GATEWAY = frozenset({502, 503, 504})


def http_status(error: BaseException) -> int | None:
    """The HTTP status the dashboard answered with, or None when there was no answer."""
    if isinstance(error, JobsAPIError):
        return error.status
    if isinstance(error, RuntimeError):
        m = _RAY_STATUS.match(str(error))
        return int(m.group("code")) if m else None
    return None


def body(error: BaseException) -> str:
    return error.body if isinstance(error, JobsAPIError) else str(error)


def no_answer(error: BaseException) -> bool:
    """The request never got an answer: refused, reset, timed out, a broken HTTP reply."""
    return isinstance(error, (OSError, http.client.HTTPException))


def is_duplicate(error: BaseException) -> bool:
    """Ray answers a submission id that exists with HTTP 500 whose body is the ValueError
    "Job with submission_id ... already exists" (job_manager.py `submit_job`, returned as text
    by job_head.py, Ray 2.60): the status alone cannot tell it from other 500s."""
    return http_status(error) == 500 and ALREADY_EXISTS in body(error)


def is_not_found(error: BaseException) -> bool:
    return http_status(error) == 404


def is_transient(error: BaseException) -> bool:
    """Worth retrying: no answer, or a gateway that lost the dashboard behind it."""
    return no_answer(error) or http_status(error) in GATEWAY
