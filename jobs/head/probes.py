"""What the supervisor reads from the cluster besides the Jobs API: Ray's node table, an attempt's
log (its size, steps and step lines), the nodes that hosted it, and the GPUs free on nodes that
answer.

`Probes` is the seam: production builds it over the dashboard's state API and the head's log
files (`from_ray`), the simulation (tests/jobs/head/sim/world.py) over its simulated world.
Standard library and Ray only: this runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

import http.client
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.client import errors
from jobs.head import capacity_probe, node_end, node_events, progress, restart_policy, run_gauges
from jobs.head.capacity_probe import Probed


@dataclass
class Probes:
    """What the supervisor reads from the cluster besides the Jobs API (injected for tests)."""

    nodes: Callable[[], list[dict[str, Any]]]
    log_size: Callable[[str], int]
    # Training steps an attempt completed, read from its log (jobs/head/progress.py).
    steps: Callable[[str], int] = lambda _job_id: 0
    # The nodes that hosted an attempt's actors and tasks (Ray's state API by job id), or its
    # driver's node when it never called ray.init (restart_policy.attempt_hosts); None when
    # unknown, and the judgement falls back to any node that could have hosted them.
    hosts: Callable[[str], frozenset[str] | None] = lambda _job_id: None
    # Which nodes answer now and the GPUs free on them (jobs/head/capacity_probe.py); None: no
    # probe, and the restart policy waits the settle time instead.
    capacity: Callable[[], Probed] | None = None
    # Whether the attempt's log shows NeMo RL stopping after its save before its nodes' end
    # (jobs/head/node_end.py): such an attempt SUCCEEDS without having finished.
    stopped_for_node_end: Callable[[str], bool] = lambda _job_id: False
    # The attempt's step lines (jobs/head/progress.py `progress_lines`), kept on the runs root.
    progress_lines: Callable[[str], str] = lambda _job_id: ""
    # Publishes the attempt's latest step figures as the run's gauges (jobs/head/run_gauges.py),
    # given the run's name and the attempt; re-reading its log, or (False) setting the last again.
    publish: Callable[[str, str, bool], None] = lambda _run, _job_id, _reread: None


class _AttemptLogs:
    """An attempt's driver log: its file on this node (an entrypoint without resources runs on
    the head, next to the supervisor), else the Jobs API's copy."""

    def __init__(self, client: Any, logs_dir: str) -> None:
        self.client = client
        self.logs_dir = logs_dir
        self._sizes: dict[str, tuple[float, int]] = {}
        self._read_at: dict[str, tuple[float, str]] = {}  # the last read: attempt -> (when, text)

    def _path(self, job_id: str) -> str:
        return os.path.join(self.logs_dir, f"job-driver-{job_id}.log")

    def size(self, job_id: str) -> int:
        """The log file's size, else the Jobs API copy's length, read at most every 10 s."""
        try:
            return os.stat(self._path(job_id)).st_size
        except OSError:
            pass
        at, size = self._sizes.get(job_id, (0.0, -1))
        if time.monotonic() - at >= 10.0:
            size = len(self.client.get_job_logs(job_id))
            self._sizes[job_id] = (time.monotonic(), size)
        return size

    def text(self, job_id: str) -> str:
        try:
            with open(self._path(job_id), errors="replace") as f:
                text = f.read()
        except OSError:
            text = self.client.get_job_logs(job_id)  # a driver on another node: the whole log
        self._read_at.clear()  # one attempt's text at a time: a log can be large
        self._read_at[job_id] = (time.monotonic(), text)
        return str(text)

    def recent(self, job_id: str) -> str:
        """The log as read in the last 25 s (the watchdog reads it every 30 s while it grows),
        else now: the gauges need not fetch a remote driver's whole log a second time. Only for
        figures to watch; decisions read `text`."""
        at, text = self._read_at.get(job_id, (float("-inf"), ""))
        return text if time.monotonic() - at < 25.0 else self.text(job_id)


def from_ray(client: Any, dashboard: str, ctx: Any) -> Probes:
    """The node table over the dashboard's state API, and an attempt's log (`_AttemptLogs`)."""
    logs = _AttemptLogs(client, os.path.join(str(ctx.address_info.get("session_dir", "")), "logs"))
    publishers: dict[str, run_gauges.Publisher] = {}

    def publish(run: str, job_id: str, reread: bool) -> None:
        if run not in publishers:
            publishers[run] = run_gauges.Publisher(run)
        if reread:
            publishers[run].publish(progress.progress_lines(logs.recent(job_id)))
        else:
            publishers[run].refresh()

    def hosts(job_id: str) -> frozenset[str] | None:
        info = client.get_job_info(job_id)
        found = node_events.hosts(dashboard, info.job_id) if info.job_id else None
        return restart_policy.attempt_hosts(info.job_id, info.driver_node_id, found)

    return Probes(
        nodes=lambda: node_events.fetch(dashboard),
        log_size=logs.size,
        steps=lambda job_id: progress.completed_steps(logs.text(job_id)),
        hosts=hosts,
        capacity=lambda: capacity_probe.probe(dashboard),
        stopped_for_node_end=lambda job_id: node_end.stopped_for_node_end(logs.text(job_id)),
        progress_lines=lambda job_id: progress.progress_lines(logs.text(job_id)),
        publish=publish,
    )


def job_alive(client: Any, submission_id: str) -> bool:
    """A job Ray still runs; only a job Ray does not know (404) or an ended one is gone: an
    answer lost to a restarting dashboard counts as alive (scale_up.Requests)."""
    try:
        return not client.get_job_status(submission_id).is_terminal()
    except (RuntimeError, OSError, http.client.HTTPException) as e:
        return not (isinstance(e, RuntimeError) and errors.is_not_found(e))
