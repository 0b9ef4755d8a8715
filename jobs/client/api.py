"""HTTP calls to a Ray dashboard's Jobs REST API (submit, status, list, stop, logs), without Ray.

Ray's JobSubmissionClient makes the same calls with `requests`, but importing it imports all of
`ray` (~0.7 s on a 2-core machine), longer than `ray job submit` takes to submit. This client
sends the same requests with the standard library (http.client; `requests` costs ~0.2 s more) and
raises the same errors, so callers (jobs/client/dashboard.py `_translated`, jobs/head/supervisor.py) read them
as before. Routes, bodies and answers follow Ray 2.60:
- requests and answers: ray/dashboard/modules/job/sdk.py (submit_job L133-269, stop_job
  L271-302, get_job_info L342-381, list_jobs L384-422, get_job_logs L449-475, tail_job_logs
  L478-540); server side ray/dashboard/modules/job/job_head.py (routes L345-666);
- an HTTP answer other than 200 is RuntimeError("Request failed with status code N: body.")
  (ray/dashboard/modules/dashboard_sdk.py `_raise_error`, L304-307);
- the submit body drops keys whose value is None (sdk.py L257-260, `strip_keys_with_value_none`).
Uploading local working_dir / py_modules needs Ray's packaging: jobs/client/dashboard.py does that with
Ray's client, lazily, then submits the gcs:// URIs here.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlsplit

from jobs.client.types import JobDetails, JobStatus

# Ray's client sets no timeout; a dashboard that accepts the connection and never answers would
# hang the CLI, so give up after a while (the caller turns TimeoutError into exit 3).
TIMEOUT_S = 120.0

# A head that has just started (a new cluster, a KubeRay head pod restarted) answers its dashboard
# before its job agent has registered; a submit then waits 10 s for the agent and answers 500 with
# this text, asking to try again later (job_head.py `submit_job` L419-427 and consts.py
# WAIT_AVAILABLE_AGENT_TIMEOUT, Ray 2.60). Nothing reached an agent, so sending it again is safe.
NO_AGENT_YET = "No available agent to submit job"
AGENT_WAIT_S = 90.0
AGENT_RETRY_S = 1.0  # between two sends of a submit no agent took

# Ray 2.46's head proxies a submit to the node's job agent over one aiohttp session, and an agent
# that drops that connection mid-request gives the caller a 500 carrying the traceback of this
# error (job_head.py `submit_job` L504-508 and `submit_job_internal` L133-141, ray-2.46.0); seen
# on heads that had just started. Whether the agent made the job is unknown, so the submit is
# sent again only under its own submission id: Ray refuses a second job of one id ("already
# exists", job_manager.py `submit_job`), which then means the first one was made.
AGENT_LINK_DROPPED = "ServerDisconnectedError"
# The same proxy on a head whose agent is not listening yet: aiohttp could not open the connection
# (`ClientConnectorError: Cannot connect to host ... [Connect call failed ...]`, answered as a 500
# traceback by the same handler; seen 2026-12-06 under Ray 2.46.0 on a head that had just
# started). Nothing reached an agent, so it is sent again as a NO_AGENT_YET answer is.
AGENT_NOT_LISTENING = "ClientConnectorError"
# What Ray's 500 for a submission id it already holds says: "Job with submission_id ... already
# exists" (job_manager.py `submit_job`, Ray 2.46 and 2.60).
ALREADY_EXISTS = "already exists"


# Not "Mozilla...": the dashboard refuses POST and PUT from what it takes for a browser.
USER_AGENT = "rl-jobs"


class JobsAPIError(RuntimeError):
    """The dashboard answered with a status other than 200 (dashboard_sdk.py `_raise_error`)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"Request failed with status code {status}: {body}.")
        self.status = status
        self.body = body


class JobsAPI:
    """One dashboard's Jobs API; method names and results are JobSubmissionClient's."""

    def __init__(
        self,
        url: str,
        timeout_s: float = TIMEOUT_S,
        agent_wait_s: float = AGENT_WAIT_S,
        agent_retry_s: float = AGENT_RETRY_S,
    ) -> None:
        # Ray strips trailing slashes from the address (dashboard_sdk.py SubmissionClient).
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) dashboard URL: {url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path  # a dashboard behind a path-routing proxy
        self.timeout_s = timeout_s
        self.agent_wait_s = agent_wait_s
        self.agent_retry_s = agent_retry_s

    # ------------------------------------------------------------------ transport

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer to one request; JobsAPIError for a non-200 answer, OSError
        (ConnectionRefusedError, TimeoutError, socket.gaierror...) or http.client.HTTPException
        when there was no answer."""
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout_s)
        try:
            data = None if body is None else json.dumps(body).encode()
            # Ray 2.46 / 2.48's dashboard answers 500 to a request without a User-Agent (its
            # middleware reads req.headers["User-Agent"]: ray/dashboard/optional_utils.py L137,
            # http_server_head.py L189 at ray-2.46.0); http.client sends none by itself.
            headers = {"User-Agent": USER_AGENT}
            if data is not None:
                headers["Content-Type"] = "application/json"
            conn.request(method, self._prefix + path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", errors="replace")
        finally:
            conn.close()
        if resp.status != 200:
            raise JobsAPIError(resp.status, text)
        return json.loads(text) if text else None

    @staticmethod
    def _job_path(job_id: str) -> str:
        # Ray puts the id in the path as is; quoting keeps an id with '/', '?' or a space
        # (from a user's typo) a single path segment, which the server decodes back.
        return f"/api/jobs/{quote(job_id, safe='')}"

    # ------------------------------------------------------------------ the calls

    def get_node_summary(self) -> list[dict[str, Any]]:
        """`GET /nodes?view=summary`: one entry per node with its raylet's state and
        `resourcesTotal` (dashboard/modules/node/node_head.py, the page `ray status` data
        comes from; Ray 2.46 and 2.60)."""
        return list(self._request("GET", "/nodes?view=summary")["data"]["summary"])

    def list_nodes(self) -> list[dict[str, Any]]:
        """`GET /api/v0/nodes?limit=10000&detail=1`: every node Ray's node table holds, alive and
        dead, with `start_time_ms` / `end_time_ms` (the state API, Ray 2.60
        dashboard/state_aggregator.py `list_nodes`; jobs/head/node_events.py reads the same)."""
        return node_rows(self._request("GET", "/api/v0/nodes?limit=10000&detail=1"))

    def get_version(self) -> dict[str, Any]:
        """`GET /api/version`: {"version", "ray_version", "ray_commit", ...} (job_head.py L345)."""
        return dict(self._request("GET", "/api/version"))

    def session_name(self) -> str | None:
        """The head's Ray session (`session_name` of `GET /api/version`), new with every head
        process, so it names the head a supervisor runs on: job_head.py `get_version`, L420-427
        in Ray 2.46.0, L419-426 in 2.48.0, L346-353 in 2.60.0. None when the answer has none."""
        name = self.get_version().get("session_name")
        return name if isinstance(name, str) and name else None

    def submit_job(
        self,
        *,
        entrypoint: str,
        submission_id: str | None = None,
        runtime_env: dict[str, Any] | None = None,
        metadata: dict[str, str] | None = None,
        entrypoint_num_cpus: float | None = None,
        entrypoint_num_gpus: float | None = None,
        entrypoint_memory: int | None = None,
        entrypoint_resources: dict[str, float] | None = None,
    ) -> str:
        """`POST /api/jobs/` with a JobSubmitRequest (common.py); the runtime_env must hold
        no local paths (upload them first). Returns the submission id the server answers."""
        body = {
            "entrypoint": entrypoint,
            "submission_id": submission_id,
            "runtime_env": runtime_env or {},
            "metadata": metadata or {},
            "entrypoint_num_cpus": entrypoint_num_cpus,
            "entrypoint_num_gpus": entrypoint_num_gpus,
            "entrypoint_memory": entrypoint_memory,
            "entrypoint_resources": entrypoint_resources,
        }
        answer = self._post_until_an_agent_takes_it(
            "/api/jobs/", {k: v for k, v in body.items() if v is not None}
        )
        return str(answer["submission_id"])  # JobSubmitResponse

    def _post_until_an_agent_takes_it(self, path: str, body: dict[str, Any]) -> Any:
        """POST, sent again while the head answers that no job agent is up yet (NO_AGENT_YET,
        AGENT_NOT_LISTENING) or dropped the link (AGENT_LINK_DROPPED), for at most
        `agent_wait_s`; any other answer is returned or raised at once."""
        deadline = time.monotonic() + self.agent_wait_s
        submission_id = body.get("submission_id")
        sent_into_a_dropped_link = False
        while True:
            try:
                return self._request("POST", path, body)
            except JobsAPIError as e:
                if sent_into_a_dropped_link and e.status == 500 and ALREADY_EXISTS in e.body:
                    return {"submission_id": submission_id}
                dropped = e.status == 500 and AGENT_LINK_DROPPED in e.body and submission_id
                no_agent = e.status == 500 and (
                    NO_AGENT_YET in e.body or AGENT_NOT_LISTENING in e.body
                )
                if not (dropped or no_agent) or time.monotonic() > deadline:
                    raise
                sent_into_a_dropped_link = sent_into_a_dropped_link or bool(dropped)
            time.sleep(self.agent_retry_s)

    def package_exists(self, uri: str) -> bool:
        """Whether the head still holds an uploaded package (`gcs://_ray_pkg_....zip`): Ray's
        own client asks `GET /api/packages/{protocol}/{name}` the same way before it uploads
        (dashboard_sdk.py `_package_exists`, Ray 2.60); 404 is "gone"."""
        protocol, _, name = uri.partition("://")
        try:
            self._request("GET", f"/api/packages/{protocol}/{name}")
        except JobsAPIError as e:
            if e.status == 404:
                return False
            raise
        return True

    def get_job_info(self, job_id: str) -> JobDetails:
        return JobDetails.model_validate(self._request("GET", self._job_path(job_id)))

    def get_job_status(self, job_id: str) -> JobStatus:
        return self.get_job_info(job_id).status

    def list_jobs(self) -> list[JobDetails]:
        return [JobDetails.model_validate(j) for j in self._request("GET", "/api/jobs/")]

    def stop_job(self, job_id: str) -> bool:
        """True when the job was running (JobStopResponse `stopped`)."""
        return bool(self._request("POST", self._job_path(job_id) + "/stop")["stopped"])

    def get_job_logs(self, job_id: str) -> str:
        return str(self._request("GET", self._job_path(job_id) + "/logs")["logs"])

    async def tail_job_logs(self, job_id: str) -> AsyncIterator[str]:
        """Log chunks from the `/logs/tail` websocket until it closes, as sdk.py L478-540:
        an abnormal close (1006) or an error frame is a RuntimeError."""
        # aiohttp costs ~0.15-0.4 s to import: only a command that follows logs pays it.
        import aiohttp

        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(self.url + self._job_path(job_id) + "/logs/tail") as ws:
                while True:
                    msg = await ws.receive()
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        yield msg.data
                    elif msg.type == aiohttp.WSMsgType.CLOSED:
                        if ws.close_code == aiohttp.WSCloseCode.ABNORMAL_CLOSURE:
                            raise RuntimeError(
                                "WebSocket connection closed unexpectedly with "
                                f"close code {ws.close_code}"
                            )
                        break
                    elif msg.type == aiohttp.WSMsgType.ERROR:
                        raise RuntimeError(f"WebSocket error for job {job_id}: {ws.exception()}")


def node_rows(answer: Any) -> list[dict[str, Any]]:
    """The node rows of a state API answer (`GET /api/v0/nodes`); ValueError when it is not one."""
    try:
        rows = answer["data"]["result"]["result"]
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a node listing: {str(answer)[:200]}") from e
    if not isinstance(rows, list):
        raise ValueError(f"not a node listing: {str(answer)[:200]}")
    return [r for r in rows if isinstance(r, dict)]
