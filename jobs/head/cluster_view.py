"""The supervisor's view of the cluster: the node table it keeps, how long the GPU nodes have
stayed the same, and the probes' facts about an attempt, each read so that a probe that cannot
answer now never breaks the loop.

Facts only: what they mean for the run is for jobs/head/restart_policy.py. Standard library and
Ray only: this runs on the Ray head inside the framework's image.
"""

from __future__ import annotations

import http.client
from typing import Any

from jobs.head import node_end, node_events, restart_policy
from jobs.head.capacity_probe import Probed
from jobs.head.clock import Clock
from jobs.head.probes import Probes
from jobs.head.protocol import Spec

# The errors a probe may raise while the dashboard restarts or a log is half-written.
_PROBE_ERRORS = (OSError, RuntimeError, ValueError, http.client.HTTPException)


class ClusterView:
    """The node table as last read, and the probes' answers with a safe default each."""

    def __init__(self, probes: Probes, spec: Spec, clock: Clock) -> None:
        self.probes = probes
        self.spec = spec
        self.clock = clock
        self.stability = node_events.Stability()
        self.nodes: list[dict[str, Any]] = []

    def observe(self) -> tuple[float, float]:
        """(GPUs alive now, seconds the set of alive GPU nodes has stayed the same)."""
        try:
            self.nodes = self.probes.nodes()
        except (OSError, ValueError, http.client.HTTPException):
            pass  # the dashboard restarts now and then: keep the last table
        ids, gpus = node_events.alive_gpu_nodes(self.lasting_nodes())
        return gpus, self.stability.observe(ids, self.clock.monotonic())

    def lasting_nodes(self) -> list[dict[str, Any]]:
        """The node table without the flex-start nodes that end before an attempt could train
        and save on them: their GPUs are not capacity (an attempt there would save at once and
        stop, or do nothing but load)."""
        if self.spec.node_max_run_s <= 0:
            return self.nodes
        ending = node_end.ending(
            self.nodes,
            self.spec.node_max_run_s,
            self.clock.time(),
            node_end.no_capacity_within_s(self.spec.save_before_node_end, self.spec.node_max_run_s),
        )
        return [n for n in self.nodes if str(n.get("node_id")) not in ending]

    def set_gauges(self, job_id: str, reread: bool) -> None:
        """The run's gauges from the attempt's log; a log that cannot be read now waits for the
        next turn (the figures are for watching, never for a decision)."""
        try:
            self.probes.publish(self.spec.run, job_id, reread)
        except _PROBE_ERRORS:
            pass

    def steps(self, job_id: str) -> int:
        try:
            return self.probes.steps(job_id)
        except _PROBE_ERRORS:
            return 0  # unknown: judged by checkpoints alone

    def probe(self) -> Probed | None:
        if self.probes.capacity is None:
            return None
        try:
            return self.probes.capacity()
        except (OSError, ValueError, http.client.HTTPException):
            return None  # cannot tell now: the settle-time rule applies

    def hosts(self, job_id: str) -> frozenset[str] | None:
        try:
            return self.probes.hosts(job_id)
        except (*_PROBE_ERRORS, KeyError):
            return None  # unknown: any node that could have hosted it counts

    def stopped_for_node_end(self, job_id: str, ended: str) -> bool:
        """The attempt saved and stopped before its flex-start nodes' end, as its log says."""
        spec = self.spec
        stops = spec.save_before_node_end == node_end.NEMO_RL
        if not restart_policy.may_have_stopped_for_node_end(ended, spec.node_max_run_s, stops):
            return False
        try:
            return self.probes.stopped_for_node_end(job_id)
        except _PROBE_ERRORS:
            return False  # unreadable: the end Ray reports stands
