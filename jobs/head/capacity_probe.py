"""Which nodes answer now and how many GPUs are free on them: the supervisor's settle by probing.

Ray's node table keeps a hard-lost node ALIVE, with its GPUs, for up to ~50 s (five missed
health checks, node_events.py); a placement on it then fails. Instead of waiting a fixed time
for the table to settle, the supervisor probes: a node answers when its raylet accepts a TCP
connection on its node manager port (the port every other raylet dials; the dashboard's node
summary gives address and port, `GET /nodes?view=summary`, dashboard/modules/node/node_head.py
at Ray 2.60). Free GPUs are the GCS's per-node resource usage (`GET /api/cluster_status`,
`loadMetricsReport.usageByNode`, `{resource: [used, total]}`, what `ray status` prints, refreshed
about every 5 s by the autoscaler monitor), counted on answering nodes only. veRL checks free GPUs
per node before it places anything and fails at once when they are missing
(verl/trainer/ppo/ray_trainer.py L103-119 `_check_resource_available` at v0.6.0), so free, not
total, is what an attempt needs.
Standard library only: it runs in the supervisor on the head.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

ANSWER_TIMEOUT_S = 1.0  # a raylet on the cluster's network answers in milliseconds


@dataclass(frozen=True)
class Raylet:
    """An alive raylet as the dashboard lists it, with its GPUs."""

    node_id: str
    address: str
    port: int
    gpus_total: float
    gpus_used: float

    @property
    def gpus_free(self) -> float:
        return max(0.0, self.gpus_total - self.gpus_used)


@dataclass(frozen=True)
class Probed:
    """The answering nodes and the GPUs free on them, at one probe."""

    answering: frozenset[str]
    gpus_free: float


def raylets(summary: Any, status: Any) -> list[Raylet]:
    """Alive raylets from the node summary, their GPU usage from the cluster status; ValueError
    when either answer is not what Ray 2.60 sends."""
    try:
        rows = summary["data"]["summary"]
        usage = status["data"]["clusterStatus"]["loadMetricsReport"]["usageByNode"] or {}
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a node summary and cluster status: {e!r}") from e
    out = []
    for row in rows if isinstance(rows, list) else []:
        raylet = (row or {}).get("raylet") or {}
        if raylet.get("state") != "ALIVE" or not raylet.get("nodeId"):
            continue
        used, total = (usage.get(raylet["nodeId"]) or {}).get("GPU") or (0.0, 0.0)
        out.append(
            Raylet(
                node_id=str(raylet["nodeId"]),
                address=str(raylet.get("nodeManagerAddress") or ""),
                port=int(raylet.get("nodeManagerPort") or 0),
                gpus_total=float(total or raylet.get("resourcesTotal", {}).get("GPU", 0) or 0),
                gpus_used=float(used or 0),
            )
        )
    return out


def answers(address: str, port: int, timeout_s: float = ANSWER_TIMEOUT_S) -> bool:
    """The raylet accepts a connection (a lost VM refuses or never answers)."""
    if not address or port <= 0:
        return False
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def tally(nodes: Iterable[Raylet], answered: Callable[[Raylet], bool]) -> Probed:
    """Which of `nodes` answered, and the GPUs free on those."""
    listed = list(nodes)
    workers = min(16, max(1, len(listed)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        replies = list(pool.map(answered, listed))
    up = [n for n, ok in zip(listed, replies, strict=True) if ok]
    return Probed(frozenset(n.node_id for n in up), sum(n.gpus_free for n in up))


def _get(url: str, timeout_s: float) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as answer:
        return json.load(answer)


def probe(dashboard_url: str, timeout_s: float = 10.0) -> Probed:
    """Probe every alive raylet the dashboard lists; OSError or ValueError when it cannot say."""
    base = dashboard_url.rstrip("/")
    listed = raylets(
        _get(f"{base}/nodes?view=summary", timeout_s), _get(f"{base}/api/cluster_status", timeout_s)
    )
    return tally(listed, lambda n: answers(n.address, n.port))
