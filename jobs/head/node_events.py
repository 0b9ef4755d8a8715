"""Which nodes died or were drained while an attempt ran, and how stable the GPU capacity is.

Read from Ray's node table through the dashboard's state API (`GET /api/v0/nodes`, what
`ray.util.state.list_nodes(detail=True)` calls; Ray 2.60 dashboard/state_aggregator.py
`list_nodes`): every node Ray ever saw, with `state` ALIVE or DEAD, `end_time_ms` (when Ray
marked it dead, late by up to ~50 s after a hard loss: 5 missed health checks of up to 10 s,
ray_config_def.h) and `state_message` built from the GCS death info ("Unexpected termination:
health check failed ...", "Terminated due to preemption" for an autoscaler drain;
dashboard/utils.py `compose_state_message`). A preemption is told from a crash by this table,
never by the GPU count at one instant.
Standard library and jobs.client only: it runs in the supervisor and the re-armer on the head.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from jobs.client.api import node_rows

# The state API caps a listing at 10000 by default (ray.util.state DEFAULT_LIMIT is 100).
_LIMIT = 10000


@dataclass(frozen=True)
class NodeDeath:
    node_id: str
    gpus: float
    ended_ms: int
    reason: str

    def describe(self) -> str:
        gpus = f" ({self.gpus:g} GPUs)" if self.gpus else ""
        return f"node {self.node_id[:12]}{gpus} died: {self.reason or 'no reason recorded'}"


def fetch(dashboard_url: str, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """Every node in Ray's node table, alive and dead."""
    url = f"{dashboard_url.rstrip('/')}/api/v0/nodes?limit={_LIMIT}&detail=1"
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:
        return parse(json.load(answer))


def parse(payload: Any) -> list[dict[str, Any]]:
    """The node rows of a state API answer; ValueError when it is not one."""
    return node_rows(payload)


def _gpus(node: dict[str, Any]) -> float:
    return float((node.get("resources_total") or {}).get("GPU", 0) or 0)


def deaths_during(
    nodes: list[dict[str, Any]],
    start_ms: int,
    end_ms: int,
    gpus_needed: int,
    hosts: frozenset[str] | None = None,
) -> list[NodeDeath]:
    """Worker nodes that hosted the attempt's workers (or could have) and died while it ran.

    `end_ms` is the latest a death can be marked and still be the attempt's (its end plus the
    settle wait), because Ray marks a hard-lost node dead late. `hosts`, when known, are the
    nodes its actors and tasks ran on (`hosts` below): only those count (counting every node, a
    spare node lost while the attempt crashed made the crash a preemption). Unknown: a run that
    needs GPUs counts GPU nodes, one that needs none any worker node. The head never counts:
    its loss ends the supervisor too.
    """
    out = []
    for n in nodes:
        if n.get("state") != "DEAD" or n.get("is_head_node"):
            continue
        if hosts:
            if str(n.get("node_id")) not in hosts:
                continue
        elif gpus_needed > 0 and _gpus(n) <= 0:
            continue
        ended = int(n.get("end_time_ms") or 0)
        started = int(n.get("start_time_ms") or 0)
        # It existed before the judgement and was marked dead while the attempt ran or within
        # the settle after (not later: a node lost after the judgement is not this attempt's).
        if start_ms <= ended <= end_ms and started <= end_ms:
            out.append(
                NodeDeath(
                    str(n.get("node_id", "?")), _gpus(n), ended, str(n.get("state_message") or "")
                )
            )
    return sorted(out, key=lambda d: d.ended_ms)


def hosts(dashboard_url: str, ray_job_id: str, timeout_s: float = 10.0) -> frozenset[str]:
    """The nodes the job's actors and tasks ran on, dead ones included: Ray's state API
    filtered by job id (`GET /api/v0/actors` and `/api/v0/tasks`, ActorState.node_id and
    TaskState.node_id, both filterable by job_id: ray/util/state/common.py L498-505,
    L776-798 @2.60; the filters are read in dashboard/state_api_utils.py L72-77)."""
    found: set[str] = set()
    query = (
        f"limit={_LIMIT}&detail=1&filter_keys=job_id&filter_predicates=%3D"
        f"&filter_values={urllib.parse.quote(ray_job_id)}"
    )
    for kind in ("actors", "tasks"):
        url = f"{dashboard_url.rstrip('/')}/api/v0/{kind}?{query}"
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            rows = parse(json.load(answer))
        found.update(str(r["node_id"]) for r in rows if r.get("node_id"))
    return frozenset(found)


def gpus_on(nodes: list[dict[str, Any]], hosts: frozenset[str] | None) -> int:
    """The GPUs of the worker nodes among `hosts`, alive or dead (the node table keeps a dead
    node's resources): what an attempt's workers had, whatever the run declared."""
    if not hosts:
        return 0
    return int(
        sum(_gpus(n) for n in nodes if str(n.get("node_id")) in hosts and not n.get("is_head_node"))
    )


def alive_gpu_nodes(nodes: list[dict[str, Any]]) -> tuple[frozenset[str], float]:
    """The ids of the alive nodes with GPUs and their GPU total."""
    alive = [n for n in nodes if n.get("state") == "ALIVE" and _gpus(n) > 0]
    return frozenset(str(n.get("node_id")) for n in alive), sum(_gpus(n) for n in alive)


class Stability:
    """How long the set of alive GPU nodes has stayed the same (fed at every poll)."""

    def __init__(self) -> None:
        self._nodes: frozenset[str] | None = None
        self._since = 0.0

    def observe(self, nodes: frozenset[str], now: float) -> float:
        if nodes != self._nodes:
            self._nodes, self._since = nodes, now
        return now - self._since
