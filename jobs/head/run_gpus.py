"""A supervised run's request for GPU nodes on a stack whose GPUs scale on demand: asked once the
run is taken, released when the run ends, each recorded.

The request is never released when the run is left to a re-armer or to another supervisor,
which hold it on. The cluster-wide request (the union of every run's, sent to Ray's autoscaler)
is jobs/head/scale_up.py's. Standard library and Ray only: this runs on the Ray head.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jobs.head import events as ev
from jobs.head import scale_up
from jobs.head.protocol import Spec


@dataclass(eq=False)
class RunGpus:
    """The run's GPU request as its supervisor makes and releases it."""

    requests: scale_up.Requests
    spec: Spec
    own_id: str
    record: Callable[..., None]
    _asked: bool = field(default=False, init=False)

    def ask(self) -> None:
        """Ask Ray's autoscaler for the run's GPU nodes, once per supervisor (the request
        stays in the cluster until released; a re-armed supervisor asks again, harmlessly)."""
        if self._asked:
            return
        spec = self.spec
        wanted = scale_up.bundles(spec.gpus_needed, spec.gpus_per_node)
        sent = self.requests.ask(spec.run, self.own_id, wanted)
        self._asked = True
        others = len(sent) - len(wanted)
        self.record(
            ev.GPUS_REQUESTED,
            f"asked Ray's autoscaler for {scale_up.describe(wanted)}: GPU nodes scale on "
            "demand on this stack; the request holds them until the run ends"
            + (
                f" (the cluster's request also keeps {others} node(s) of other runs)"
                if others
                else ""
            ),
            bundles=wanted,
            cluster_bundles=len(sent),
        )

    def resend(self) -> None:
        """Send the cluster's request again while the run waits for its GPUs: two supervisors
        asking at once each send the union they read, and Ray keeps the last one sent, which
        may lack the other run's bundles (after a head loss the re-armer re-arms every run in
        one sweep: exactly then). Asking once, that run waited until someone else asked."""
        if not self._asked:
            return
        spec = self.spec
        self.requests.ask(
            spec.run, self.own_id, scale_up.bundles(spec.gpus_needed, spec.gpus_per_node)
        )

    def release(self) -> None:
        """The run is over: drop its request so idle GPU nodes can go (gpu.idleMinutes), also
        one an earlier supervisor of the run made (this one may end before asking: a stop
        during its restore)."""
        try:
            left: list[Any] = self.requests.drop(self.spec.run)
        except Exception as e:  # the run is over: say what was not released, never raise
            self.record(
                ev.ERROR,
                f"could not release the run's GPU request ({type(e).__name__}: {e}); idle GPU "
                "nodes stay until another run's request replaces it",
                error=type(e).__name__,
            )
            return
        self.record(
            ev.GPUS_RELEASED,
            "released the run's GPU request: its GPU nodes are removed once idle for "
            "gpu.idleMinutes"
            + (f" (other runs still ask for {scale_up.describe(left)})" if left else ""),
            cluster_bundles=len(left),
        )
